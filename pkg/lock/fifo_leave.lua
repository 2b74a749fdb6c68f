-- KEYS[1] queue; KEYS[2] waiters' heartbeats; KEYS[3] the exclusive
-- acquirers waiting (acquire.lua). ARGV[1] token; ARGV[2] the wake-up
-- channel. A waiter that gives up leaves the queue and the list of
-- exclusive acquirers at once and wakes the others, since it may have been
-- the head that everyone else waited for, or the writer that shared
-- acquirers let go first.
local ms = now()
local n = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
expire(KEYS[2], ms, {KEYS[1], KEYS[2]})
if redis.call('ZREM', KEYS[3], ARGV[1]) > 0 then
  expire(KEYS[3], ms, {KEYS[3]})
  n = n + 1
end
if n > 0 then
  -- Best effort, as a release's (release.lua): the waiter has left.
  redis.pcall('PUBLISH', ARGV[2], 'released')
end
return n

-- KEYS[1] queue; KEYS[2] waiters' heartbeats. ARGV[1] token; ARGV[2] the
-- wake-up channel. A waiter that gives up leaves the queue at once and wakes
-- the others, since it may have been the head that everyone else waited for.
local ms = now()
local n = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
expire(KEYS[2], ms, {KEYS[1], KEYS[2]})
if n > 0 then
  redis.call('PUBLISH', ARGV[2], 'released')
end
return n

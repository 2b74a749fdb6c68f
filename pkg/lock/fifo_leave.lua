-- KEYS[1] queue; KEYS[2] waiters' heartbeats; KEYS[3] the exclusive
-- acquirers waiting (acquire.lua); KEYS[4] the lock key; KEYS[5] the shared
-- and semaphore acquirers waiting (wake.lua). ARGV[1] token; ARGV[2] the
-- wake-up channel; ARGV[3] the base of the waiters' own streams and
-- channels (wake.lua). A waiter that gives up leaves the queue and the
-- lists of waiters at once. Unless an exclusive holder has the lock (whose
-- release wakes the next), it wakes the waiter that can take the lock now,
-- since it may have been the head that everyone else waited for, or the
-- writer that shared acquirers let go first. It also ends its own read of
-- its wake-up stream, should one still block (an interrupted wait).
local ms = now()
local n = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
expire(KEYS[2], ms, {KEYS[1], KEYS[2]})
if redis.call('ZREM', KEYS[3], ARGV[1]) > 0 then
  expire(KEYS[3], ms, {KEYS[3]})
  n = n + 1
end
if redis.call('ZREM', KEYS[5], ARGV[1]) > 0 then
  expire(KEYS[5], ms, {KEYS[5]})
end
push(ARGV[3], ARGV[1], '0')
-- Best effort, as a release's (wake.lua): the waiter has left, and a
-- refused look at the lock (pcall) wakes as if it were free.
local held = redis.pcall('EXISTS', KEYS[4])
if n > 0 and held ~= 1 then
  wake(ARGV[2], ARGV[3], KEYS[1], KEYS[2], KEYS[3], KEYS[5], false)
end
return n

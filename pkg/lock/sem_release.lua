-- KEYS[1] semaphore zset; KEYS[2] holders' values; KEYS[3], KEYS[4] the
-- FIFO queue and its heartbeats; KEYS[5] the exclusive acquirers waiting;
-- KEYS[6] the shared and semaphore acquirers waiting (wake.lua). ARGV[1]
-- token; ARGV[2] the wake-up channel; ARGV[3] the base of the waiters' own
-- streams and channels (wake.lua). Replies: {0} the
-- token holds no slot; {1} released; {5, error, channel, command} released, but the
-- server refused the wake-up (wake.lua); {4, holds left} the token had re-entered
-- its slot: one hold released.
local z, vals = KEYS[1], KEYS[2]
local ms = now()
trim(z, ms, {vals})
if not redis.call('ZSCORE', z, ARGV[1]) then
  return {0}
end
local v = redis.call('HGET', vals, ARGV[1])
local n = holds(v or '')
if n > 1 then
  redis.call('HSET', vals, ARGV[1], withHolds(v, n - 1))
  return {4, n - 1}
end
redis.call('ZREM', z, ARGV[1])
redis.call('HDEL', vals, ARGV[1])
-- The slot is free: tidying up after it is best effort (pcall), as the
-- wake-up is; a refusal must not fail a done release. The next acquire
-- or release sets the keys' TTL again.
pcall(expire, z, ms, {z, vals})
-- A semaphore slot lets one waiter in; the last shared slot, everyone.
local err, refused, command = wake(ARGV[2], ARGV[3], KEYS[3], KEYS[4], KEYS[5], KEYS[6], not isShared(v or ''))
if err then
  return {5, err, refused, command or false}
end
return {1}

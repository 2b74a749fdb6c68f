-- KEYS[1] semaphore zset; KEYS[2] holders' values. ARGV[1] token; ARGV[2]
-- the wake-up channel. Replies: {0} the token holds no slot; {1} released.
local z, vals = KEYS[1], KEYS[2]
local ms = now()
trim(z, ms, {vals})
if redis.call('ZREM', z, ARGV[1]) == 0 then
  return {0}
end
redis.call('HDEL', vals, ARGV[1])
expire(z, ms, {z, vals})
redis.call('PUBLISH', ARGV[2], 'released')
return {1}

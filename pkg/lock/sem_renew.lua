-- KEYS[1] semaphore zset; KEYS[2] holders' values. ARGV[1] token; ARGV[2]
-- ttl in ms. Replies: {0} the token holds no slot (never re-created); {1}
-- renewed.
local z, vals = KEYS[1], KEYS[2]
local ms = now()
trim(z, ms, {vals})
if not redis.call('ZSCORE', z, ARGV[1]) then
  return {0}
end
redis.call('ZADD', z, string.format('%d', ms + tonumber(ARGV[2])), ARGV[1])
expire(z, ms, {z, vals})
return {1}

-- KEYS[1] semaphore zset; KEYS[2] holders' values. ARGV[1] token; ARGV[2]
-- ttl in ms, 0 for the TTL the slot was taken with. Replies: {0} the token
-- holds no slot (never re-created); {1, ttl in ms} renewed; {4} ttl 0, but
-- the value records no TTL. The slot's value records the renewal's server
-- time (withRenewed), as a lock's does.
local z, vals = KEYS[1], KEYS[2]
local ms = now()
trim(z, ms, {vals})
if not redis.call('ZSCORE', z, ARGV[1]) then
  return {0}
end
local ttl = ARGV[2]
local v = redis.call('HGET', vals, ARGV[1])
if ttl == '0' then
  ttl = leaseTTL(v)
  if not ttl then
    return {4}
  end
end
redis.call('ZADD', z, string.format('%d', ms + tonumber(ttl)), ARGV[1])
if v then
  local nv = withRenewed(v, ms)
  if nv ~= v then
    redis.call('HSET', vals, ARGV[1], nv)
  end
end
expire(z, ms, {z, vals})
return {1, tonumber(ttl)}

-- KEYS[1] lock key; KEYS[2], KEYS[3] the semaphore of the same name (zset,
-- values). ARGV[1] token; ARGV[2] value prefix.
--
-- Re-entry: the token proves its caller holds the lock (or a slot) now, and
-- takes one more hold of the same lease. The count lives in the stored value
-- ("holds"); the TTL is left alone, since the outer holder keeps renewing it.
-- Release takes one hold back and deletes only the last.
--
-- Replies: {1, new value, pttl, server ms} re-entered the lock; {3, new
-- value, pttl, server ms} re-entered a semaphore slot; {0} the token holds
-- nothing here; {2, type, ...} another holder, as held() describes.
local key, token, prefix = KEYS[1], ARGV[1], ARGV[2]
local t = redis.call('TYPE', key)['ok']
local clock = redis.call('TIME')
local ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
if t == 'string' then
  local v = redis.call('GET', key)
  -- Only lockctl values can carry a count; a foreign lock whose whole value
  -- is the token is not re-entered.
  if string.sub(v, 1, #prefix) == prefix then
    local nv = withHolds(v, holds(v) + 1)
    redis.call('SET', key, nv, 'KEEPTTL')
    return {1, nv, redis.call('PTTL', key), ms}
  end
  return held(2, key, t, v)
end
if t ~= 'none' then
  return held(2, key, t)
end
local exp = redis.call('ZSCORE', KEYS[2], token)
if exp and tonumber(exp) > ms then
  local v = redis.call('HGET', KEYS[3], token)
  if v then
    local nv = withHolds(v, holds(v) + 1)
    redis.call('HSET', KEYS[3], token, nv)
    return {3, nv, tonumber(exp) - ms, ms}
  end
end
return {0}

-- KEYS[1] lock key. ARGV[1] token; ARGV[2] ttl in ms; ARGV[3] value prefix.
-- Replies: {0} no lock (never re-created); {1} renewed; {2, ...} another
-- holder, as held() describes.
local key = KEYS[1]
local t = redis.call('TYPE', key)['ok']
if t == 'none' then
  return {0}
end
if t == 'string' then
  local v = redis.call('GET', key)
  if owns(v, ARGV[1], ARGV[3]) then
    redis.call('PEXPIRE', key, ARGV[2])
    return {1}
  end
  return held(2, key, t, v)
end
return held(2, key, t)

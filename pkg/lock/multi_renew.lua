-- Renews a set of locks in one step: all of them, or none when the token
-- no longer holds one of them (the set is lost).
--
-- KEYS the set's lock keys (one Redis Cluster slot). ARGV[1] token;
-- ARGV[2] ttl in ms, 0 for the TTL the set was taken with.
-- Replies: {1, ttl in ms} every key renewed; {0, i} key i is gone;
-- {2, i, type, ...} another holder has key i, as held() describes; {4, i}
-- ttl 0, but key i's value records no TTL. Only {1, ...} renewed anything.
-- Each value records the renewal's server time (withRenewed), as renew.lua's.
local token, ttl = ARGV[1], ARGV[2]
local prefix = tokenPrefix(token)
local vals = {}
for i, key in ipairs(KEYS) do
  -- pcall: see renew.lua.
  local v = redis.pcall('GET', key)
  if v == false then
    return {0, i}
  end
  local r
  if type(v) ~= 'string' then
    r = held(2, key, redis.call('TYPE', key)['ok'])
  elseif not owns(v, token, prefix) then
    r = held(2, key, 'string', v)
  end
  if r then
    table.insert(r, 2, i)
    return r
  end
  vals[i] = v
  if ttl == '0' then
    ttl = leaseTTL(v)
    if not ttl then
      return {4, i}
    end
  end
end
local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i, key in ipairs(KEYS) do
  local nv = withRenewed(vals[i], ms)
  if nv ~= vals[i] then
    redis.call('SET', key, nv, 'PX', ttl)
  else
    redis.call('PEXPIRE', key, ttl)
  end
end
return {1, tonumber(ttl)}

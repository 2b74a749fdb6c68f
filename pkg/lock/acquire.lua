-- KEYS[1] lock key; KEYS[2] its fence counter (same cluster slot, no TTL);
-- KEYS[3], KEYS[4] the semaphore of the same name (zset, values).
-- ARGV[1] token; ARGV[2] ttl in ms; ARGV[3] the value's members after the
-- fence: ,"owner":...[,"note":...]. The value starts {"token":"<token>",
-- built here (tokenPrefix) rather than sent with every call.
--
-- Replies: {1, fence, server ms} acquired; {2, stored value, server ms} the
-- same token already held it (a retry after a lost reply), ttl refreshed;
-- {0, type, ...} refused, as held() describes, or as semHeld() does.
local key, token = KEYS[1], ARGV[1]
local function grant()
  -- The fence only once the SET is certain, so refused attempts burn none.
  local fence, ms = next_fence(KEYS[2])
  local v = '{"token":"' .. token .. '","fence":' .. fence .. ARGV[3] ..
    ',"acquired_ms":' .. string.format('%d', ms) .. '}'
  redis.call('SET', key, v, 'NX', 'PX', ARGV[2])
  return {1, fence, ms}
end
-- The usual case, neither the lock nor a semaphore of the same name: one
-- EXISTS counts both. It is exactly the case in which semHeld() finds no
-- holder and TYPE says 'none', so the checks below are only skipped when
-- they could not refuse.
if redis.call('EXISTS', key, KEYS[3]) == 0 then
  return grant()
end
local sem = semHeld(KEYS[3], KEYS[4])
if sem then
  return sem
end
local t = redis.call('TYPE', key)['ok']
if t == 'none' then
  return grant()
end
if t == 'string' then
  local v = redis.call('GET', key)
  if owns(v, token, tokenPrefix(token)) then
    redis.call('PEXPIRE', key, ARGV[2])
    local now = redis.call('TIME')
    return {2, v, tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)}
  end
  return held(0, key, t, v)
end
return held(0, key, t)

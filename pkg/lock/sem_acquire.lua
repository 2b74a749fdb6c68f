-- KEYS[1] semaphore zset (token -> expiry in server ms); KEYS[2] holders'
-- values (hash token -> lockctl JSON value); KEYS[3] fence counter; KEYS[4]
-- the lock key of the same name; KEYS[5] the shared and semaphore
-- acquirers waiting (wake.lua).
-- ARGV[1] token; ARGV[2] ttl in ms; ARGV[3] limit; ARGV[4] value prefix;
-- ARGV[5] the value's members after the fence; ARGV[6] '1' when the caller
-- named no owner (as acquire.lua's ARGV[5]), else '0'; ARGV[7] '0', or, for
-- a caller that will wait when refused, how long in ms it stays listed in
-- KEYS[5] without a new attempt.
--
-- Replies: {1, fence, server ms} acquired a slot; {2, stored value, server
-- ms} the token already held one, its expiry refreshed; {0, 'semaphore',
-- value of the holder whose slot frees first, its pttl, holders} full; {0,
-- type, ...} a plain lock of the same name holds it, as held() describes;
-- {4, limit} the live holders use another limit (0: they hold it in shared
-- mode).
local z, vals = KEYS[1], KEYS[2]
local ms = now()
-- Holders that died free their slot here, by their expiry: no client has to
-- notice them.
trim(z, ms, {vals})
local ttl = tonumber(ARGV[2])
local exp = string.format('%d', ms + ttl)
if redis.call('ZSCORE', z, ARGV[1]) then
  redis.call('ZADD', z, exp, ARGV[1])
  expire(z, ms, {z, vals})
  -- As acquire.lua: the caller's members replace the stored ones, unless
  -- they name another limit (the live holders' limit stays the semaphore's).
  local v = redis.call('HGET', vals, ARGV[1]) or ''
  local nv = withMembers(v, ARGV[5], ARGV[6] == '1')
  if valueLimit(nv) ~= valueLimit(v) then
    nv = v
  end
  nv = withRenewed(nv, ms)
  if nv ~= v then
    redis.call('HSET', vals, ARGV[1], nv)
    v = nv
  end
  unlistWaiter(KEYS[5], ARGV[1], ms, ARGV[7])
  return {2, v, ms}
end
local lt = redis.call('TYPE', KEYS[4])['ok']
if lt ~= 'none' then
  listWaiter(KEYS[5], ARGV[1], ms, ARGV[7])
  return held(0, KEYS[4], lt)
end
local n = redis.call('ZCARD', z)
-- The limit is a property of the semaphore while anyone holds a slot: every
-- holder's value records the N it came in with, and a caller with another N
-- is refused rather than let in beyond the holders' bound.
if n > 0 then
  local first = redis.call('ZRANGE', z, 0, 0)
  local fv = redis.call('HGET', vals, first[1]) or ''
  if slotKind(fv) == 'shared' then
    -- Shared holders (shared.go) keep their slots here: not a semaphore.
    return {4, 0}
  end
  local live = valueLimit(fv)
  if live and live ~= ARGV[3] then
    return {4, tonumber(live)}
  end
end
if n < tonumber(ARGV[3]) then
  local fence = next_fence(KEYS[3])
  local v = newValue(ARGV[4], fence, ARGV[5], ms)
  redis.call('ZADD', z, exp, ARGV[1])
  redis.call('HSET', vals, ARGV[1], v)
  expire(z, ms, {z, vals})
  unlistWaiter(KEYS[5], ARGV[1], ms, ARGV[7])
  return {1, fence, ms}
end
listWaiter(KEYS[5], ARGV[1], ms, ARGV[7])
local first = redis.call('ZRANGE', z, 0, 0, 'WITHSCORES')
return {0, 'semaphore', redis.call('HGET', vals, first[1]) or first[1], tonumber(first[2]) - ms, n}

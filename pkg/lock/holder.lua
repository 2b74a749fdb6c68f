-- Prelude shared by the lock scripts (prepended in Go, after value.lua). A refused call
-- describes the current holder in the same reply, so building the caller's
-- error costs no second round trip. Reply: {code, type, value or hash
-- fields, pttl}. Large hashes are never Redisson locks (those hold one field
-- per holding thread), so their fields are not shipped back.
local function held(code, key, t, v)
  if t == 'string' then
    return {code, t, v or redis.call('GET', key), redis.call('PTTL', key)}
  end
  if t == 'hash' and redis.call('HLEN', key) <= 64 then
    return {code, t, redis.call('HGETALL', key), redis.call('PTTL', key)}
  end
  return {code, t}
end

-- slotKind is what holds the slots of a semaphore zset, from one holder's
-- value: 'shared' for holders in shared mode (shared.go), whose values carry
-- "mode":"shared", else 'semaphore'. The two never mix in one zset.
local function slotKind(v)
  if isShared(v) then
    return 'shared'
  end
  return 'semaphore'
end

-- semHeld describes the live holders of the semaphore z (values in vals) as
-- a semaphore refusal, {0, 'semaphore' (or 'shared'), value of the holder
-- whose slot frees first, its pttl, holders}, or returns nil when it has none. A plain lock of
-- the same name is refused while any slot is held, and the reverse.
local function semHeld(z, vals)
  if redis.call('EXISTS', z) == 0 then
    return nil
  end
  local t = redis.call('TIME')
  local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local live = '(' .. string.format('%d', ms)
  local first = redis.call('ZRANGEBYSCORE', z, live, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if #first == 0 then
    return nil
  end
  local n = redis.call('ZCOUNT', z, live, '+inf')
  local v = redis.call('HGET', vals, first[1]) or first[1]
  return {0, slotKind(v), v, tonumber(first[2]) - ms, n}
end

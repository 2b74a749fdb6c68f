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

-- freeOwn starts a release of the plain lock key by token: it deletes the
-- key when token holds it once and returns nil, for the caller to wake whom
-- the release lets in; otherwise it returns the reply: {0} no lock and no
-- semaphore; {3} no lock, but a semaphore (sem), which the caller asks in
-- turn, so that a plain "not held" stays one round trip (a refused EXISTS
-- asks it too: it writes nothing); {4, holds left} one hold of a
-- re-entered lock given back, the lock staying with its TTL; {2, ...}
-- another holder, as held() describes. GET is a pcall: see renew.lua.
local function freeOwn(key, sem, token)
  local v = redis.pcall('GET', key)
  if v == false then
    local n = redis.pcall('EXISTS', sem)
    if n == 1 or type(n) == 'table' then
      return {3}
    end
    return {0}
  end
  if type(v) ~= 'string' then
    return held(2, key, redis.call('TYPE', key)['ok'])
  end
  if not owns(v, token, tokenPrefix(token)) then
    return held(2, key, 'string', v)
  end
  local n = holds(v)
  if n > 1 then
    redis.call('SET', key, withHolds(v, n - 1), 'KEEPTTL')
    return {4, n - 1}
  end
  redis.call('DEL', key)
  return nil
end

-- Prelude shared by the lock scripts (prepended in Go). A refused call
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

-- owns mirrors ownsValue in value.go: a lockctl value whose prefix carries the
-- token, or a foreign plain string lock whose whole value is the token.
local function owns(v, token, prefix)
  return v == token or string.sub(v, 1, #prefix) == prefix
end

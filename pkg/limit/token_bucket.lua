-- Token bucket: one hash {tk = tokens, ts = server microseconds of tk, cfg =
-- the configuration they were written under (see the prelude; absent in
-- older state)}.
-- N tokens per PERIOD is d tokens per p microseconds (reduced fraction), so
-- tokens are counted in units of 1/p token and refill d units per
-- microsecond: whole numbers only.
-- KEYS[1] key; ARGV: d, p, capacity, cost.
local key = KEYS[1]
local d = tonumber(ARGV[1])
local p = tonumber(ARGV[2])
local capacity = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])

local full = capacity * p
local tokens, ts = full, now
local h = redis.pcall('HMGET', key, 'tk', 'ts', 'cfg')
if refusal(h) then return h end
if h.err then return foreign(key) end -- WRONGTYPE
if h[3] and h[3] ~= cfg then return {2, h[3]} end
-- A hash without tokens is no bucket's (an application's): never written into.
if not h[1] and redis.call('EXISTS', key) == 1 then return foreign(key) end
if h[1] then
  tokens, ts = tonumber(h[1]), tonumber(h[2])
  if not tokens or not ts then return wrongtype() end
  if now > ts then
    tokens = math.min(full, tokens + (now - ts) * d)
    ts = now
  end
  -- A server clock that stepped back refills nothing until it catches up.
end

local lag = ts - now -- > 0 only after the clock stepped back
local need = cost * p
if tokens < need then
  return {0, capacity, idiv(tokens, p), cdiv(need - tokens, d) + lag, cdiv(full - tokens, d) + lag}
end
tokens = tokens - need
redis.call('HSET', key, 'tk', string.format('%d', tokens), 'ts', string.format('%d', ts), 'cfg', cfg)
-- A full bucket equals no key: expire when the refill would complete.
redis.call('PEXPIRE', key, math.max(1, cdiv(full - tokens + lag * d, d * 1000)))
return {1, capacity, idiv(tokens, p), 0, cdiv(full - tokens, d) + lag}

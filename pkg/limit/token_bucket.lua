-- Token bucket: one string "TK:TS;CONFIG", the tokens counted at server
-- microsecond TS and the configuration they were written under (see the
-- prelude). One GET and one SET with its TTL: a hash (the form of earlier
-- versions, {tk, ts, cfg}, still read and replaced at the next write) cost
-- a third command for the TTL.
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
local tokens, ts
local v = redis.pcall('GET', key)
if refusal(v) then return v end
if type(v) == 'table' then -- WRONGTYPE
  -- A hash is an earlier version's bucket when it holds nothing but tk, ts
  -- and a bucket's cfg; any other (an application's) is never written into.
  local h = redis.pcall('HMGET', key, 'tk', 'ts', 'cfg')
  if refusal(h) then return h end
  if h.err or not h[1] or not limiterState(key) then return foreign(key) end
  if h[3] and h[3] ~= cfg then return {2, h[3]} end
  tokens, ts = tonumber(h[1]), tonumber(h[2])
  if not tokens or not ts then return wrongtype() end
elseif v then
  local tk, at, c = string.match(v, '^(%d+):(%d+);(.+)$')
  if not tk then return foreign(key) end
  if c ~= cfg then return {2, c} end
  tokens, ts = tonumber(tk), tonumber(at)
end
if not tokens then
  tokens, ts = full, now
elseif now > ts then
  tokens = math.min(full, tokens + (now - ts) * d)
  ts = now
end
-- A server clock that stepped back refills nothing until it catches up.

local lag = ts - now -- > 0 only after the clock stepped back
local need = cost * p
if tokens < need then
  return {0, capacity, idiv(tokens, p), cdiv(need - tokens, d) + lag, cdiv(full - tokens, d) + lag}
end
tokens = tokens - need
-- A full bucket equals no key: expire when the refill would complete.
redis.call('SET', key, string.format('%d:%d;%s', tokens, ts, cfg),
  'PX', math.max(1, cdiv(full - tokens + lag * d, d * 1000)))
return {1, capacity, idiv(tokens, p), 0, cdiv(full - tokens, d) + lag}

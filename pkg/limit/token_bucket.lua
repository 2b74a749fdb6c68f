-- Token bucket: one string "TK:TS;CONFIG", the tokens counted at server
-- microsecond TS and the configuration they were written under (see the
-- prelude). One GET and one SET with its TTL: a hash (the form of earlier
-- versions, {tk, ts, cfg}, still read and replaced at the next write) cost
-- a third command for the TTL.
-- N tokens per PERIOD is d tokens per p microseconds (reduced fraction), so
-- tokens are counted in units of 1/p token and refill d units per
-- microsecond: whole numbers only.
-- KEYS[1] key; ARGV: d, capacity*p (a full bucket), cost*p.
-- Reply: one integer, which Go reads with the arguments it sent: the tokens
-- left when admitted, -1 minus the tokens there are when refused. After the
-- server clock stepped back, {allowed, tokens, retry after, reset after},
-- times in units of 1/d microsecond.
local key = KEYS[1]
local d = ARGV[1] + 0
local full = ARGV[2] + 0
local need = ARGV[3] + 0

local tokens, ts = full, now
local v = redis.pcall('GET', key)
if v then
  if type(v) == 'table' then
    -- WRONGTYPE, or the server's refusal. A hash is an earlier version's
    -- bucket when it holds nothing but tk, ts and a bucket's cfg; any other
    -- (an application's) is never written into.
    local L = lib()
    if L.refusal(v) then return v end
    local h = redis.pcall('HMGET', key, 'tk', 'ts', 'cfg')
    if L.refusal(h) then return h end
    if h.err or not h[1] or not L.limiterState(key) then return L.foreign(key) end
    if h[3] and h[3] ~= cfg then return {2, h[3]} end
    tokens, ts = tonumber(h[1]), tonumber(h[2])
    if not tokens or not ts then return L.wrongtype() end
  else
    local tk, at, c = string.match(v, '^(%d+):(%d+);(.+)$')
    if not tk then return lib().foreign(key) end
    if c ~= cfg then return {2, c} end
    tokens, ts = tk + 0, at + 0
  end
  if now > ts then
    tokens = math.min(full, tokens + (now - ts) * d)
    ts = now
  end
  -- A server clock that stepped back refills nothing until it catches up.
end

local lag = (ts - now) * d -- > 0 only after the clock stepped back
if tokens < need then
  if lag == 0 then return -1 - tokens end
  return {0, tokens, need - tokens + lag, full - tokens + lag}
end
tokens = tokens - need
-- A full bucket equals no key: expire when the refill would complete.
local reset = full - tokens + lag
local ms = d * 1000
local px = fmod(reset, ms)
if px > 0 then px = (reset - px) / ms + 1 else px = reset / ms end
if px < 1 then px = 1 end
redis.call('SET', key, string.format('%d:%d;%s', tokens, ts, cfg), 'PX', px)
if lag == 0 then return tokens end
return {1, tokens, 0, reset}

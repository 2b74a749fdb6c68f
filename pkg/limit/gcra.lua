-- GCRA: one string "TATus:REM;CONFIG", the theoretical arrival time of the
-- next call as whole microseconds plus REM/d of one, and the configuration
-- it was written under (see the prelude; absent in older state). The emission interval
-- PERIOD/N is p/d microseconds exactly (Go reduces the fraction), so time is
-- counted in ticks of 1/d microsecond and no fraction is ever rounded.
-- KEYS[1] key; ARGV: d, p, burst, cost.
local key = KEYS[1]
local d = tonumber(ARGV[1])
local p = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])

local ahead = 0 -- ticks the TAT lies in the future
local v = redis.pcall('GET', key)
if refusal(v) then return v end
if type(v) == 'table' then return foreign(key) end -- WRONGTYPE
if v then
  local tu, tr, c = string.match(v, '^(%d+):(%d+);(.+)$')
  if not tu then tu, tr = string.match(v, '^(%d+):(%d+)$') end
  if not tu then return foreign(key) end
  if c and c ~= cfg then return {2, c} end
  ahead = (tonumber(tu) - now) * d + tonumber(tr)
  if ahead < 0 then ahead = 0 end
end

local cap = burst * p -- an idle key admits burst calls at once
local after = ahead + cost * p
if after > cap then
  -- Refused: nothing is written, the key keeps the TTL of its last write.
  return {0, burst, idiv(cap - ahead, p), cdiv(after - cap, d), cdiv(ahead, d)}
end

-- The key expires exactly when the TAT passes, when it equals no key at all.
redis.call('SET', key, string.format('%d:%d;%s', now + idiv(after, d), math.fmod(after, d), cfg),
  'PX', cdiv(after, d * 1000))
return {1, burst, idiv(cap - after, p), 0, cdiv(after, d)}

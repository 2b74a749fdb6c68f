-- GCRA: one string "TATus:REM;CONFIG", the theoretical arrival time of the
-- next call as whole microseconds plus REM/d of one, and the configuration
-- it was written under (see the prelude; absent in older state). The emission interval
-- PERIOD/N is p/d microseconds exactly (Go reduces the fraction), so time is
-- counted in ticks of 1/d microsecond and no fraction is ever rounded.
-- KEYS[1] key; ARGV: d, burst*p (the capacity in ticks), cost*p.
-- Reply: one integer, which Go reads with the arguments it sent: the new
-- TAT's ticks ahead of now when admitted, -1 minus the ticks it lay ahead
-- when refused.
local key = KEYS[1]
local d = ARGV[1] + 0
local cap = ARGV[2] + 0 -- an idle key admits burst calls at once
local inc = ARGV[3] + 0

local ahead = 0 -- ticks the TAT lies in the future
local v = redis.pcall('GET', key)
if v then
  if type(v) == 'table' then return lib().failed(v, key) end
  local tu, tr, c = string.match(v, '^(%d+):(%d+);(.+)$')
  if not tu then
    tu, tr = string.match(v, '^(%d+):(%d+)$')
    if not tu then return lib().foreign(key) end
  elseif c ~= cfg then
    return {2, c}
  end
  ahead = (tu - now) * d + tr
  if ahead < 0 then ahead = 0 end
end

local after = ahead + inc
if after > cap then
  -- Refused: nothing is written, the key keeps the TTL of its last write.
  return -1 - ahead
end

-- The key expires exactly when the TAT passes, when it equals no key at all.
local r = fmod(after, d)
local ms = d * 1000
local px = fmod(after, ms)
if px > 0 then px = (after - px) / ms + 1 else px = after / ms end
redis.call('SET', key, string.format('%d:%d;%s', now + (after - r) / d, r, cfg), 'PX', px)
return after

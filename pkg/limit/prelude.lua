-- Shared by every limit script (prepended in Go). Lua numbers are doubles:
-- every value here is an integer below 2^53 (Go checks the bounds), and
-- division goes through math.fmod, which is exact, so no step is lost to
-- rounding.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2]) -- server microseconds

local function idiv(a, b) -- floor(a / b) for a >= 0, b > 0
  return (a - math.fmod(a, b)) / b
end

local function cdiv(a, b) -- ceil(a / b) for a >= 0, b > 0
  local r = math.fmod(a, b)
  local q = (a - r) / b
  if r > 0 then q = q + 1 end
  return q
end

local function wrongtype()
  return redis.error_reply('WRONGTYPE key holds a value this limit algorithm did not write')
end

-- KEYS[1] highest fence accepted for a resource (no TTL). ARGV[1] the fence,
-- a decimal integer >= 1 without leading zeros.
-- Replies: {1, fence} accepted and recorded; {0, highest} refused.
--
-- Compared as decimal strings rather than Lua numbers (doubles), so fences
-- beyond 2^53 still compare exactly.
local function greater(a, b)
  if #a ~= #b then
    return #a > #b
  end
  return a > b
end
local highest = redis.call('GET', KEYS[1]) or '0'
if greater(ARGV[1], highest) then
  redis.call('SET', KEYS[1], ARGV[1])
  return {1, ARGV[1]}
end
return {0, highest}

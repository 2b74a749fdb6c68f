-- KEYS[1] the record of a resource (no TTL): "<fence>" or "<fence> <token>",
-- the highest fence accepted and the token that presented it (neither holds
-- a space). ARGV[1] the
-- fence, a decimal integer >= 1 without leading zeros; ARGV[2] the caller's
-- token, or '' for none.
-- Replies: {1, fence} accepted (and recorded when greater); {0, highest}
-- refused.
local rec = redis.call('GET', KEYS[1]) or '0'
local highest, by = string.match(rec, '^(%S+) ?(.*)$')
highest = highest or '0'
local f, token = ARGV[1], ARGV[2]
if dec_greater(f, highest) then
  if token ~= '' then
    redis.call('SET', KEYS[1], f .. ' ' .. token)
  else
    redis.call('SET', KEYS[1], f)
  end
  return {1, f}
end
-- A holder writes many times with one fence; only it may repeat it.
if f == highest and token ~= '' and token == by then
  return {1, f}
end
return {0, highest}

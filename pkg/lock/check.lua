-- KEYS[1] the record of a resource (no TTL): "<fence>" or "<fence> <token>",
-- the highest fence accepted and the token that presented it (neither holds
-- a space). ARGV[1] the
-- fence, a decimal integer >= 1 without leading zeros; ARGV[2] the caller's
-- token, or '' for none; ARGV[3] '1' for a shared holder's check (shared.go),
-- else '0'.
-- Replies: {1, fence} accepted (and recorded when greater); {0, highest}
-- refused.
local rec = redis.call('GET', KEYS[1]) or '0'
local highest, by = string.match(rec, '^(%S+) ?(.*)$')
highest = highest or '0'
local f, token = ARGV[1], ARGV[2]
if ARGV[3] == '1' then
  -- Shared holders all hold the fence of the last exclusive acquisition,
  -- so any number of them may present the highest fence. The record keeps
  -- no token then: the exclusive holder that presented it first lost its
  -- lease before shared holders could come in, and may not repeat it.
  if f == highest or dec_greater(f, highest) then
    if f ~= highest or by ~= '' then
      redis.call('SET', KEYS[1], f)
    end
    return {1, f}
  end
  return {0, highest}
end
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

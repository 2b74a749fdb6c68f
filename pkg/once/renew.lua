-- Extend a running claim, only for the token that holds it.
-- ARGV: token, ttl_ms. Replies {"ok"}, {"gone"}, {"lapsed"} (an
-- at-most-once claim whose lease ran out: now "unknown"), or
-- {"other", pttl, HGETALL}.
local key = KEYS[1]
local rec = redis.call('HGETALL', key)
if #rec == 0 then return {'gone'} end
local f = {}
for i = 1, #rec, 2 do f[rec[i]] = rec[i + 1] end
if f.token == ARGV[1] and f.state == 'unknown' then return {'lapsed'} end
if f.state == 'running' and f.token == ARGV[1] then
  if f.lease_ms then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    if tonumber(f.lease_ms) <= now then
      -- Too late: a caller may already have found the claim lapsed.
      redis.call('HSET', key, 'state', 'unknown')
      return {'lapsed'}
    end
    redis.call('HSET', key, 'lease_ms', string.format('%d', now + tonumber(ARGV[2])))
    return {'ok'}
  end
  redis.call('PEXPIRE', key, ARGV[2])
  return {'ok'}
end
return {'other', redis.call('PTTL', key), rec}

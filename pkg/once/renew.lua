-- Extend a running claim, only for the token that holds it.
-- ARGV: token, ttl_ms. Replies {"ok"}, {"gone"}, or {"other", pttl, HGETALL}.
local key = KEYS[1]
local rec = redis.call('HGETALL', key)
if #rec == 0 then return {'gone'} end
local f = {}
for i = 1, #rec, 2 do f[rec[i]] = rec[i + 1] end
if f.state == 'running' and f.token == ARGV[1] then
  redis.call('PEXPIRE', key, ARGV[2])
  return {'ok'}
end
return {'other', redis.call('PTTL', key), rec}

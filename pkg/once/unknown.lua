-- Mark a claim's outcome unknown now: its command was stopped part way
-- when the claim was lost, so whether it took effect is unknown. Only the
-- token that holds the claim may, while it is running or unknown.
-- ARGV: token. Replies {"ok"}, {"gone"}, or {"other", pttl, HGETALL}.
local key = KEYS[1]
local rec = redis.call('HGETALL', key)
if #rec == 0 then return {'gone'} end
local f = {}
for i = 1, #rec, 2 do f[rec[i]] = rec[i + 1] end
if (f.state == 'running' or f.state == 'unknown') and f.token == ARGV[1] then
  redis.call('HSET', key, 'state', 'unknown')
  return {'ok'}
end
return {'other', redis.call('PTTL', key), rec}

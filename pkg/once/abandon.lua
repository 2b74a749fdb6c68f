-- Drop a claim without recording an outcome, so that a later call runs
-- the command (it never started). Only the token that holds the claim may,
-- also after an at-most-once claim lapsed into "unknown".
-- ARGV: token. Replies {"ok"}, {"gone"}, or {"other", pttl, HGETALL}.
local key = KEYS[1]
local rec = redis.call('HGETALL', key)
if #rec == 0 then return {'gone'} end
local f = {}
for i = 1, #rec, 2 do f[rec[i]] = rec[i + 1] end
if (f.state == 'running' or f.state == 'unknown') and f.token == ARGV[1] then
  redis.call('DEL', key)
  return {'ok'}
end
return {'other', redis.call('PTTL', key), rec}

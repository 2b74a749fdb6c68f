-- Record the outcome of a claimed run and keep it for result_ttl.
-- ARGV: token, exit, result_ttl_ms, owner, fingerprint, started_ms,
-- attempts, at_most_once ("1"/"0").
-- Replies {"ok", pttl, HGETALL}, {"other", pttl, HGETALL}, or {"gone"}
-- (at most once: the record is gone).
local key = KEYS[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rec = redis.call('HGETALL', key)
if #rec > 0 then
  local f = {}
  for i = 1, #rec, 2 do f[rec[i]] = rec[i + 1] end
  if (f.state ~= 'running' and f.state ~= 'unknown') or f.token ~= ARGV[1] then
    return {'other', redis.call('PTTL', key), rec}
  end
  if f.state == 'unknown' or (f.lease_ms and tonumber(f.lease_ms) <= now) then
    -- An at-most-once claim lapsed and nobody resolved it: its claimant
    -- knows the outcome after all, which is better than "unknown".
    redis.call('HSET', key, 'expired', '1')
  end
elseif ARGV[8] == '1' then
  -- An at-most-once record never expires: something deleted it (an
  -- operator's `once resolve --retry`), and the key is free for a new
  -- run, which an outcome written now would turn into a replay.
  return {'gone'}
else
  -- The claim expired and nobody took over. The command did run, so its
  -- outcome is recorded all the same: a later call must replay, not rerun.
  redis.call('HSET', key, 'owner', ARGV[4], 'fingerprint', ARGV[5],
    'started_ms', ARGV[6], 'attempts', ARGV[7], 'expired', '1')
end
local started = tonumber(redis.call('HGET', key, 'started_ms')) or now
redis.call('HSET', key, 'state', 'done', 'exit', ARGV[2],
  'finished_ms', string.format('%d', now), 'duration_ms', string.format('%d', math.max(0, now - started)))
redis.call('HDEL', key, 'token', 'lease_ms')
redis.call('PEXPIRE', key, ARGV[3])
return {'ok', redis.call('PTTL', key), redis.call('HGETALL', key)}

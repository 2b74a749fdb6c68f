-- Claim KEYS[1] for one run, unless it is running, done or its outcome is
-- unknown.
-- ARGV: token, owner, fingerprint, ttl_ms, rerun_failed ("1"/"0"),
-- at_most_once ("1"/"0").
-- Replies {status, pttl, HGETALL}: status "claimed", "running", "done",
-- "unknown" or "fingerprint". The record's time is the server's.
--
-- An at-least-once claim is a key with a TTL: when its claimant dies the
-- key expires and the next call runs the command again. An at-most-once
-- claim has no TTL; its lease is a deadline in the hash (lease_ms, server
-- time), and a claim whose lease lapsed without an outcome is marked
-- "unknown" here, in the same step that finds it, so that no later call
-- runs the command until an operator resolves it (resolve.lua).
local key = KEYS[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local attempts = 0
local rec = redis.call('HGETALL', key) -- WRONGTYPE for a key that is no hash
if #rec > 0 then
  local f = {}
  for i = 1, #rec, 2 do f[rec[i]] = rec[i + 1] end
  if f.state ~= 'running' and f.state ~= 'done' and f.state ~= 'unknown' then
    return redis.error_reply('WRONGTYPE hash is not a once record')
  end
  local pttl = redis.call('PTTL', key)
  -- Checked first: a different request must never see, or replay, this one's outcome.
  if (f.fingerprint or '') ~= ARGV[3] then return {'fingerprint', pttl, rec} end
  if f.state == 'running' and f.lease_ms and tonumber(f.lease_ms) <= now then
    redis.call('HSET', key, 'state', 'unknown')
    return {'unknown', pttl, redis.call('HGETALL', key)}
  end
  if f.state == 'unknown' then return {'unknown', pttl, rec} end
  if f.state == 'running' then return {'running', pttl, rec} end
  if not (ARGV[5] == '1' and f.exit ~= '0') then return {'done', pttl, rec} end
  attempts = tonumber(f.attempts) or 1
  redis.call('DEL', key)
end
if ARGV[6] ~= '1' then
  -- The key is absent here, so this PEXPIRE changes nothing; a server
  -- that refuses it (an ACL without PEXPIRE) refuses before the HSET
  -- rather than after, which would leave a running claim without a TTL
  -- that every later call finds running, for ever.
  redis.call('PEXPIRE', key, ARGV[4])
end
redis.call('HSET', key, 'state', 'running', 'token', ARGV[1], 'owner', ARGV[2],
  'fingerprint', ARGV[3], 'started_ms', string.format('%d', now), 'attempts', attempts + 1)
if ARGV[6] == '1' then
  redis.call('HSET', key, 'mode', 'at-most-once', 'lease_ms', string.format('%d', now + tonumber(ARGV[4])))
  return {'claimed', -1, redis.call('HGETALL', key)}
end
redis.call('PEXPIRE', key, ARGV[4])
return {'claimed', tonumber(ARGV[4]), redis.call('HGETALL', key)}

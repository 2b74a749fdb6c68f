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
  -- An unknown outcome comes before the fingerprint: there is no outcome
  -- to show or replay, and whatever request asks, nobody may run the
  -- command until an operator resolves the key.
  if f.state == 'running' and f.lease_ms and tonumber(f.lease_ms) <= now then
    redis.call('HSET', key, 'state', 'unknown')
    return {'unknown', pttl, redis.call('HGETALL', key)}
  end
  if f.state == 'unknown' then return {'unknown', pttl, rec} end
  -- Checked before anything else: a different request must never see, or
  -- replay, this one's outcome.
  if (f.fingerprint or '') ~= ARGV[3] then return {'fingerprint', pttl, rec} end
  if f.state == 'running' then return {'running', pttl, rec} end
  if not (ARGV[5] == '1' and f.exit ~= '0') then return {'done', pttl, rec} end
  attempts = tonumber(f.attempts) or 1
  redis.call('DEL', key)
end
redis.call('HSET', key, 'state', 'running', 'token', ARGV[1], 'owner', ARGV[2],
  'fingerprint', ARGV[3], 'started_ms', string.format('%d', now), 'attempts', attempts + 1)
if ARGV[6] == '1' then
  redis.call('HSET', key, 'mode', 'at-most-once', 'lease_ms', string.format('%d', now + tonumber(ARGV[4])))
  return {'claimed', -1, redis.call('HGETALL', key)}
end
-- The HSET above comes first, so that a server out of memory refuses the
-- claim before it writes anything (a script that has written is let go on
-- under maxmemory). A server that refuses the PEXPIRE (an ACL without it)
-- must not keep a running claim without a TTL, which every later call
-- would find running for ever: the claim is taken back.
local ttl = redis.pcall('PEXPIRE', key, ARGV[4])
if type(ttl) == 'table' and ttl.err then
  redis.call('DEL', key)
  return redis.error_reply(ttl.err)
end
return {'claimed', tonumber(ARGV[4]), redis.call('HGETALL', key)}

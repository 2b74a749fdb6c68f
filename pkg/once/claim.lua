-- Claim KEYS[1] for one run, unless it is running or done.
-- ARGV: token, owner, fingerprint, ttl_ms, rerun_failed ("1"/"0").
-- Replies {status, pttl, HGETALL}: status "claimed", "running", "done" or
-- "fingerprint". The record's time is the server's.
local key = KEYS[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local attempts = 0
local rec = redis.call('HGETALL', key) -- WRONGTYPE for a key that is no hash
if #rec > 0 then
  local f = {}
  for i = 1, #rec, 2 do f[rec[i]] = rec[i + 1] end
  if f.state ~= 'running' and f.state ~= 'done' then
    return redis.error_reply('WRONGTYPE hash is not a once record')
  end
  local pttl = redis.call('PTTL', key)
  -- Checked first: a different request must never see, or replay, this one's outcome.
  if (f.fingerprint or '') ~= ARGV[3] then return {'fingerprint', pttl, rec} end
  if f.state == 'running' then return {'running', pttl, rec} end
  if not (ARGV[5] == '1' and f.exit ~= '0') then return {'done', pttl, rec} end
  attempts = tonumber(f.attempts) or 1
  redis.call('DEL', key)
end
redis.call('HSET', key, 'state', 'running', 'token', ARGV[1], 'owner', ARGV[2],
  'fingerprint', ARGV[3], 'started_ms', string.format('%d', now), 'attempts', attempts + 1)
redis.call('PEXPIRE', key, ARGV[4])
return {'claimed', tonumber(ARGV[4]), redis.call('HGETALL', key)}

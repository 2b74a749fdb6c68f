-- Resolve an at-most-once record whose outcome is unknown (its claim's
-- lease lapsed without an outcome), and record who did it in the audit
-- stream.
-- KEYS[1] the record; KEYS[2] the audit stream (absent on a Cluster, where
-- it lives in another slot: the caller writes the audit record between a
-- check and the resolution).
-- ARGV: decision ("succeeded", "failed", "retry"), exit, result_ttl_ms,
-- who, reason, name, audit MAXLEN, check ("1": only check).
-- Replies {"ok", pttl, HGETALL, audit id|false} (the record as it was
-- before), or {state, pttl, HGETALL} when it is not unknown ("running",
-- "done"), or {"none"}.
-- Everything is checked before anything is written, and the audit record
-- is written first: a refusal (an ACL without XADD) changes nothing. The
-- write that resolves comes next; when the server refuses it (an ACL
-- without HSET or DEL), the audit record is withdrawn and nothing changed.
local key = KEYS[1]
local rec = redis.call('HGETALL', key) -- WRONGTYPE for a key that is no hash
if #rec == 0 then return {'none'} end
local f = {}
for i = 1, #rec, 2 do f[rec[i]] = rec[i + 1] end
if f.state ~= 'running' and f.state ~= 'done' and f.state ~= 'unknown' then
  return redis.error_reply('WRONGTYPE hash is not a once record')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local pttl = redis.call('PTTL', key)
local state = f.state
if state == 'running' and f.lease_ms and tonumber(f.lease_ms) <= now then state = 'unknown' end
if state ~= 'unknown' then return {state, pttl, rec} end
if ARGV[8] == '1' then return {'ok', pttl, rec, false} end
local id = false
if KEYS[2] then
  id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[7], '*',
    'who', ARGV[4], 'name', ARGV[6], 'key', key, 'kind', 'once', 'action', 'once-resolve',
    'decision', ARGV[1], 'exit', ARGV[2], 'owner', f.owner or '', 'reason', ARGV[5])
end
local r
if ARGV[1] == 'retry' then
  r = redis.pcall('DEL', key)
else
  r = redis.pcall('HSET', key, 'state', 'done', 'exit', ARGV[2], 'finished_ms', string.format('%d', now),
    'expired', '1', 'resolved', ARGV[1], 'resolved_by', ARGV[4])
end
if type(r) == 'table' and r.err then
  if id then
    redis.pcall('XDEL', KEYS[2], id)
  end
  error(r)
end
if ARGV[1] ~= 'retry' then
  redis.call('HDEL', key, 'token', 'lease_ms', 'duration_ms')
  redis.call('PEXPIRE', key, ARGV[3])
end
return {'ok', pttl, rec, id}

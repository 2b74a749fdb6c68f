-- KEYS[1] lock key; KEYS[2] the audit stream (absent on Redis Cluster, where
-- it lives in another slot and the caller appends the record itself).
-- ARGV[1] token, or a hex prefix (8-40 digits) of SHA-1(token); ARGV[2] the
-- release channel; ARGV[3] who; ARGV[4] reason; ARGV[5] lock name;
-- ARGV[6] audit MAXLEN; ARGV[7] token hash length.
-- Replies: {0} no lock; {1, type, value|fields, pttl, kind, owner, token,
-- fence, audit id|false} deleted; {2, type, value|fields, pttl} another
-- holder; {3, type} not a lock.
local key = KEYS[1]
local t = redis.call('TYPE', key)['ok']
if t == 'none' then
  return {0}
end

local want = ARGV[1]
local function matches(tok)
  if tok == want then
    return true
  end
  local n = #want
  return n >= 8 and n <= 40 and not string.find(want, '[^0-9a-f]')
    and string.sub(redis.sha1hex(tok), 1, n) == want
end

local pttl = redis.call('PTTL', key)
local body, token, kind, owner, fence
if t == 'string' then
  body = redis.call('GET', key)
  token = string.match(body, '^{"token":"([^"]*)"')
  if token then
    kind = 'lockctl'
    local ok, d = pcall(cjson.decode, body)
    if ok and type(d) == 'table' and type(d.owner) == 'string' then
      owner = d.owner
    end
    fence = string.match(body, '"fence":(%d+)')
  else
    kind, token, owner = 'string', body, body
  end
elseif t == 'hash' and redis.call('HLEN', key) <= 64 then
  -- Redisson: one field "uuid:threadId" per holder.
  body = redis.call('HGETALL', key)
  kind = 'redisson'
  for i = 1, #body, 2 do
    if matches(body[i]) then
      token = body[i]
    end
  end
  if not token then
    return {2, t, body, pttl}
  end
  owner = token
else
  return {3, t}
end
if not matches(token) then
  return {2, t, body, pttl}
end

redis.call('DEL', key)
redis.call('PUBLISH', ARGV[2], 'released')
if kind == 'redisson' then
  -- Redisson's waiters listen here; 0 is its unlock message.
  redis.call('PUBLISH', 'redisson_lock__channel:{' .. key .. '}', 0)
end
local hash = string.sub(redis.sha1hex(token), 1, tonumber(ARGV[7]))
local id = false
if KEYS[2] then
  id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[6], '*',
    'who', ARGV[3], 'name', ARGV[5], 'key', key, 'kind', kind,
    'owner', owner or '', 'token_hash', hash, 'fence', fence or '0',
    'ttl_ms', tostring(pttl), 'reason', ARGV[4])
end
return {1, t, body, pttl, kind, owner or '', token, fence or '0', id}

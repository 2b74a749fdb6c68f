-- KEYS[1] lock key; KEYS[2] its semaphore slots (zset token -> expiry in
-- server ms); KEYS[3] the slots' values (hash token -> lockctl JSON);
-- KEYS[4], KEYS[5] a Redisson fair lock's queue and timeouts (see
-- wakeFairHead); KEYS[6] the audit stream (absent on Redis Cluster, where
-- it lives in another slot and the caller appends the record itself).
-- ARGV[1] token, or a hex prefix (8-40 digits) of SHA-1(token); ARGV[2] the
-- release channel; ARGV[3] who; ARGV[4] reason; ARGV[5] lock name;
-- ARGV[6] audit MAXLEN; ARGV[7] token hash length; ARGV[8] Redisson's
-- channel for the key; ARGV[9] Redisson's unlock message.
-- Replies: {0} no lock and no semaphore slot; {1, type, value|fields,
-- pttl, kind, owner, token, fence, audit id|false, holders left} released
-- (type 'zset' for a slot: kind 'semaphore' for a --limit holder's,
-- 'shared' for a shared holder's); {2, type, value|fields, pttl, holders}
-- held, but not by the token (for slots, the value of the one that frees
-- first); {3, type} not a lock.
local key, sem, vals = KEYS[1], KEYS[2], KEYS[3]

local want = ARGV[1]
local function matches(tok)
  if tok == want then
    return true
  end
  local n = #want
  return n >= 8 and n <= 40 and not string.find(want, '[^0-9a-f]')
    and string.sub(redis.sha1hex(tok), 1, n) == want
end

local function describe(body)
  local token = string.match(body, '^{"token":"([^"]+)"')
  if not token then
    return 'string', body, body, nil
  end
  local owner
  local ok, d = pcall(cjson.decode, body)
  if ok and type(d) == 'table' and type(d.owner) == 'string' then
    owner = d.owner
  end
  return 'lockctl', token, owner, string.match(body, '"fence":(%d+)')
end

local function audit(kind, owner, token, fence, pttl)
  if not KEYS[6] then
    return false
  end
  local hash = string.sub(redis.sha1hex(token), 1, tonumber(ARGV[7]))
  return redis.call('XADD', KEYS[6], 'MAXLEN', '~', ARGV[6], '*',
    'who', ARGV[3], 'name', ARGV[5], 'key', key, 'kind', kind,
    'owner', owner or '', 'token_hash', hash, 'fence', fence or '0',
    'ttl_ms', tostring(pttl), 'reason', ARGV[4])
end

-- Redisson's fair lock (RFairLock) keeps its waiters in a list (KEYS[4],
-- their thread names in arrival order) and the time each gives up its place
-- in a sorted set (KEYS[5], Redisson's client ms), and wakes only the head,
-- with its unlock message on a channel of the head's own: Redisson's
-- channel, ':', the head's name. After a delete, do as its forceUnlock
-- does: drop the heads whose place timed out, wake the one that is left.
-- Otherwise the head sleeps until its own timer, up to the lease. Keys of
-- another type are someone else's: left alone, nobody woken.
local function wakeFairHead()
  local queue, timeouts = KEYS[4], KEYS[5]
  local tt = redis.call('TYPE', timeouts)['ok']
  if redis.call('TYPE', queue)['ok'] ~= 'list' or (tt ~= 'zset' and tt ~= 'none') then
    return
  end
  local tm = redis.call('TIME')
  local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
  while true do
    local head = redis.call('LINDEX', queue, 0)
    if not head then
      return
    end
    local timeout = tonumber(redis.call('ZSCORE', timeouts, head))
    if not timeout or timeout > now then
      local ch = ARGV[8] .. ':' .. head
      redis.call('PUBLISH', ch, ARGV[9])
      redis.pcall('SPUBLISH', ch, ARGV[9])
      return
    end
    redis.call('ZREM', timeouts, head)
    redis.call('LPOP', queue)
  end
end

-- The lock key: a lockctl lock, another client's SET NX lock, a Redisson
-- hash lock.
local t = redis.call('TYPE', key)['ok']
local other
if t == 'string' or (t == 'hash' and redis.call('HLEN', key) <= 64) then
  local pttl = redis.call('PTTL', key)
  local body, token, kind, owner, fence
  if t == 'string' then
    body = redis.call('GET', key)
    kind, token, owner, fence = describe(body)
  else
    -- Redisson: one field "uuid:threadId" per holder.
    body = redis.call('HGETALL', key)
    kind = 'redisson'
    for i = 1, #body, 2 do
      if matches(body[i]) then
        token = body[i]
      end
    end
    owner = token
  end
  if token and matches(token) then
    redis.call('DEL', key)
    redis.call('PUBLISH', ARGV[2], 'released')
    if kind == 'redisson' then
      -- Wake Redisson's waiters as its own unlock does. On a Redis 7
      -- Cluster Redisson subscribes with SSUBSCRIBE; before Redis 7 there
      -- is no SPUBLISH, and pcall leaves that error alone.
      redis.call('PUBLISH', ARGV[8], ARGV[9])
      redis.pcall('SPUBLISH', ARGV[8], ARGV[9])
      wakeFairHead()
    end
    local id = audit(kind, owner, token, fence, pttl)
    return {1, t, body, pttl, kind, owner or '', token, fence or '0', id, 0}
  end
  other = {2, t, body, pttl, 1}
elseif t ~= 'none' then
  other = {3, t}
end

-- Semaphore slots (--limit), where shared holders live too, their values
-- marked "mode":"shared" (a semaphore and shared holders of one name
-- exclude each other, so the slots of one zset are all of one kind). Slots
-- past their expiry hold nothing: they are left for lockctl's next acquire
-- or release to trim, as a holder that died is.
local tm = redis.call('TIME')
local ms = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local live = redis.call('ZRANGEBYSCORE', sem, '(' .. string.format('%d', ms), '+inf', 'WITHSCORES')
for i = 1, #live, 2 do
  local token = live[i]
  if matches(token) then
    local pttl = tonumber(live[i + 1]) - ms
    local body = redis.call('HGET', vals, token) or ''
    local _, _, owner, fence = describe(body)
    local kind = 'semaphore'
    local marked = body
    if marked == '' then
      -- No value: the other slots tell the kind.
      local j = i == 1 and 3 or 1
      marked = live[j] and (redis.call('HGET', vals, live[j]) or '') or ''
    end
    if string.find(marked, ',"mode":"shared"', 1, true) then
      kind = 'shared'
    end
    redis.call('ZREM', sem, token)
    redis.call('HDEL', vals, token)
    -- Both keys keep the TTL of the latest remaining slot, as lockctl's
    -- own release leaves them, or go with the last one.
    local last = redis.call('ZRANGE', sem, -1, -1, 'WITHSCORES')
    if #last == 0 then
      redis.call('DEL', sem, vals)
    else
      local ttl = string.format('%d', math.max(1, tonumber(last[2]) - ms))
      redis.call('PEXPIRE', sem, ttl)
      redis.call('PEXPIRE', vals, ttl)
    end
    redis.call('PUBLISH', ARGV[2], 'released')
    local id = audit(kind, owner, token, fence, pttl)
    return {1, 'zset', body, pttl, kind, owner or '', token, fence or '0', id, #live / 2 - 1}
  end
end
if other then
  return other
end
if #live > 0 then
  local first = live[1]
  return {2, 'zset', redis.call('HGET', vals, first) or first, tonumber(live[2]) - ms, #live / 2}
end
return {0}

-- KEYS[1] lock key; KEYS[2] its semaphore slots (zset token -> expiry in
-- server ms); KEYS[3] the slots' values (hash token -> lockctl JSON);
-- KEYS[4], KEYS[5] the FIFO queue and its heartbeats; KEYS[6] the exclusive
-- acquirers waiting; KEYS[7] the shared and semaphore acquirers waiting
-- (the waiters wake.lua picks from, as a release's); KEYS[8] the audit
-- stream (absent on Redis Cluster, where it lives in another slot and the
-- caller appends the record itself).
-- ARGV[1] token, or a hex prefix (ARGV[15] to 40 digits) of SHA-1(token);
-- ARGV[2] the release channel; ARGV[3] who; ARGV[4] reason; ARGV[5] lock
-- name; ARGV[6] audit MAXLEN; ARGV[7] token hash length; ARGV[8] Redisson's
-- channel for the key; ARGV[9] Redisson's unlock message; ARGV[10] "check"
-- to find the holder and write nothing (on a Cluster the caller writes the
-- audit record between a check and the release); ARGV[11] what Redisson
-- puts before a read hold's timeout keys (the key, in braces unless it
-- holds a '{'); ARGV[12] Redisson's read-write lock channel for the key;
-- ARGV[13] Redisson's read unlock message (every waiter wakes); ARGV[14]
-- the base of the waiters' own wake-up streams and channels (wake.lua);
-- ARGV[15] the fewest hex digits a hash prefix may have.
-- Replies: {0} no lock and no semaphore slot; {1, type, value|fields,
-- pttl, kind, owner, token, fence, audit id|false, holders left, wake-up
-- refusal|false, its channel|false, the command refused|false} released,
-- or for a check would be
-- (type 'zset' for a slot: kind 'semaphore' for a --limit holder's,
-- 'shared' for a shared holder's; for a hold of a Redisson read-write
-- lock, holders left counts its other holds; the refusal is the server's
-- error when it refused a wake-up, the release standing, with the channel
-- refused, or the command that picks the waiter, as wake.lua returns
-- them); {2, type, value|fields, pttl, holders} held, but not by the
-- token (for slots, the value of the one that frees first); {3, type} not
-- a lock; {4, n} the hash prefix names n holders; {5, digits} a hex token
-- that is no holder's is shorter than a hash prefix must be (ARGV[15]).
-- Neither 4 nor 5 changes anything.
-- Order: everything is checked before anything is written, and the audit
-- record is the first write, so a key that is not a lock, a holder that is
-- not the token's and an ACL that refuses XADD all leave nothing changed.
local key, sem, vals = KEYS[1], KEYS[2], KEYS[3]
local check = ARGV[10] == 'check'

local want = ARGV[1]
local shortest = tonumber(ARGV[15])
local hex = #want <= 40 and not string.find(want, '[^0-9a-f]')
local hashed = hex and #want >= shortest
-- The holder a token names: the token itself, or a prefix of its hash.
local function matches(tok)
  if tok == want then
    return true
  end
  return hashed and string.sub(redis.sha1hex(tok), 1, #want) == want
end

local function describe(body)
  local token = valueToken(body)
  if not token then
    return 'string', body, body, nil
  end
  return 'lockctl', token, valueOwner(body), valueFence(body)
end

-- A Redisson hold: field "uuid:threadId" holding a count of at least 1
-- (no looser than Go, so nothing passes here that Go then refuses).
local function hold(field, n)
  local thread = string.match(field, '^.+:[+-]?(%d+)$')
  return thread and #thread <= 18 and string.match(n, '^%d+$') and #n <= 18 and tonumber(n) >= 1
end

-- A Redisson lock (RLock, fair lock) as lockwire.ParseRedisson reads one:
-- at least one field, every field a hold. An application's hash is no
-- lock this script may delete.
local function redisson(fields)
  if #fields == 0 then
    return false
  end
  for i = 1, #fields, 2 do
    if not hold(fields[i], fields[i + 1]) then
      return false
    end
  end
  return true
end

-- The thread of a read-write lock's hold: a write hold's field is its
-- thread's with ":write" after it.
local function rwThread(field)
  return (string.gsub(field, ':write$', ''))
end

-- A Redisson read-write lock (RReadWriteLock) as lockwire.ParseRedissonRW
-- reads one: its mode, 'read' or 'write', in the field 'mode', and at least
-- one hold beside it, "uuid:threadId" for a read hold, "uuid:threadId:write"
-- for a write hold. Returns the mode, or false.
local function rwlock(fields)
  local mode, holds = false, 0
  for i = 1, #fields, 2 do
    if fields[i] == 'mode' then
      mode = fields[i + 1]
    elseif hold(rwThread(fields[i]), fields[i + 1]) then
      holds = holds + 1
    else
      return false
    end
  end
  if (mode == 'read' or mode == 'write') and holds > 0 then
    return mode
  end
  return false
end

local function audit(kind, owner, token, fence, pttl)
  if not KEYS[8] then
    return false
  end
  local hash = string.sub(redis.sha1hex(token), 1, tonumber(ARGV[7]))
  return redis.call('XADD', KEYS[8], 'MAXLEN', '~', ARGV[6], '*',
    'who', ARGV[3], 'name', ARGV[5], 'key', key, 'kind', kind,
    'owner', owner or '', 'token_hash', hash, 'fence', fence or '0',
    'ttl_ms', tostring(pttl), 'reason', ARGV[4])
end

-- The release proper, after the audit record: a command the ACL refuses
-- there withdraws the record and fails the script, so no record tells of
-- a release that did not happen.
local function write(id, ...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then
    if id then
      redis.pcall('XDEL', KEYS[8], id)
    end
    error(r)
  end
  return r
end

-- Wake-ups are best effort: a user whose ACL refuses PUBLISH or the
-- channel still releases, and the waiters find the lock free at their
-- next poll. The first refusal goes back to the caller, who warns.
local refused, refusedOn, refusedCmd = false, false, false
local function notify(channel, msg)
  local r = redis.pcall('PUBLISH', channel, msg)
  if type(r) == 'table' and r.err and not refused then
    refused, refusedOn = r.err, channel
  end
end

-- handOff wakes lockctl's waiters exactly as a release does: wake.lua's
-- wake, on the same keys, picks them (the FIFO head, the exclusive waiter
-- listed longest ago, the shared ones) and appends to their own wake-up
-- streams, which they sleep on. one: a semaphore slot was freed, which
-- lets one waiter in. A waiters' list of another type, which wake takes
-- for a data error, comes after the release here: the release stands, and
-- the refusal is reported as wake reports one, every process's first
-- waiter woken instead.
local function handOff(one)
  local ok, err, channel, command = pcall(wake, ARGV[2], ARGV[14], KEYS[4], KEYS[5], KEYS[6], KEYS[7], one)
  if not ok then
    local r = redis.pcall('PUBLISH', ARGV[2], 'released')
    channel = type(r) == 'table' and r.err and ARGV[2] or ''
    err, command = type(err) == 'table' and err.err or tostring(err), step
  end
  if err and not refused then
    refused, refusedOn, refusedCmd = err, channel, command or false
  end
end

-- Redisson's waiters on a Cluster of Redis 7 subscribe with SSUBSCRIBE;
-- before Redis 7 there is no SPUBLISH, and pcall leaves that error alone.
local function wakeRedisson(channel, msg)
  notify(channel, msg)
  redis.pcall('SPUBLISH', channel, msg)
end

-- A read hold keeps one key per re-entry n, "<ARGV[11]>:<field>:rwlock_timeout:<n>",
-- holding that re-entry's lease. A count past this is no hold Redisson made:
-- the keys beyond it are left to expire, not looped over.
local maxTimeouts = 1000
local function rwTimeout(field, n)
  return ARGV[11] .. ':' .. field .. ':rwlock_timeout:' .. n
end

-- Frees one hold of a Redisson read-write lock whole (every re-entry) and
-- leaves the lock as Redisson's own unlock of that hold's last re-entry
-- does (RedissonWriteLock and RedissonReadLock unlockInnerAsync): the last
-- hold deletes the hash and wakes the waiters; a write hold whose thread
-- also reads leaves a read lock; a read hold among others leaves the hash
-- to live as long as the longest lease left. fields are the hash's before,
-- mode its mode. Returns the number of holds left.
local function releaseRW(id, fields, field, count, mode)
  local writer = rwThread(field) ~= field
  local left = #fields / 2 - 2
  if left == 0 then
    write(id, 'DEL', key)
  elseif writer then
    -- The writer's read holds stay: a read lock now. Set first, so that a
    -- refusal of either write leaves the hold as it was.
    write(id, 'HSET', key, 'mode', 'read')
    local r = redis.pcall('HDEL', key, field)
    if type(r) == 'table' and r.err then
      redis.pcall('HSET', key, 'mode', 'write')
      if id then
        redis.pcall('XDEL', KEYS[8], id)
      end
      error(r)
    end
  else
    write(id, 'HDEL', key, field)
  end
  if not writer then
    -- Tidying up after a hold that is gone (pcall): its timeout keys
    -- would expire with its lease.
    for n = 1, math.min(tonumber(count), maxTimeouts) do
      redis.pcall('DEL', rwTimeout(field, n))
    end
  end
  if left == 0 then
    -- As Redisson's unlock: a writer wakes every waiter (its read unlock
    -- message; readers may all come in), the last reader one (its unlock
    -- message; only a writer waits for readers).
    wakeRedisson(ARGV[12], writer and ARGV[13] or ARGV[9])
  elseif writer then
    -- Readers may come in. Redisson's own unlock does not wake them here
    -- (the writer lives on, and its read unlock will); after a forced
    -- release they would sleep until the lease runs out.
    wakeRedisson(ARGV[12], ARGV[13])
  elseif mode == 'read' then
    -- As Redisson's read unlock: the lock lives as long as the longest
    -- lease of the holds left. Without one (timeout keys gone or without
    -- a TTL) it keeps its TTL: a forced release frees one hold, never the
    -- others.
    local longest = -3
    for i = 1, #fields, 2 do
      if fields[i] ~= 'mode' and fields[i] ~= field then
        for n = 1, math.min(tonumber(fields[i + 1]), maxTimeouts) do
          local ms = redis.pcall('PTTL', rwTimeout(fields[i], n))
          if type(ms) == 'number' and ms > longest then
            longest = ms
          end
        end
      end
    end
    if longest > 0 then
      redis.pcall('PEXPIRE', key, longest)
    end
  end
  handOff(false)
  return left
end

-- The tokens of every holder of the name: the lock key's (a lockctl or
-- another client's string lock, a Redisson lock's holds) and the live
-- semaphore or shared slots'.
local function holderTokens()
  local out = {}
  local t = redis.call('TYPE', key)['ok']
  if t == 'string' then
    local body = redis.call('GET', key)
    out[1] = valueToken(body) or body
  elseif t == 'hash' and redis.call('HLEN', key) <= 64 then
    local fields = redis.call('HGETALL', key)
    if redisson(fields) or rwlock(fields) then
      for i = 1, #fields, 2 do
        if fields[i] ~= 'mode' then
          out[#out + 1] = fields[i]
        end
      end
    end
  end
  local tm = redis.call('TIME')
  local ms = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
  for _, tok in ipairs(redis.call('ZRANGEBYSCORE', sem, '(' .. string.format('%d', ms), '+inf')) do
    out[#out + 1] = tok
  end
  return out
end

-- A hex token that is no holder's own is a prefix of the hash of one
-- (as listings show): it must be long enough that a holder who took over
-- since the operator looked does not share it by chance, and name one
-- holder alone (two semaphore slots may share a short one). Either
-- refusal changes nothing. A token that is a holder's own is that
-- holder's, whatever hash prefixes it also is.
if hex then
  local exact, named = false, 0
  for _, tok in ipairs(holderTokens()) do
    if tok == want then
      exact = true
    elseif hashed and string.sub(redis.sha1hex(tok), 1, #want) == want then
      named = named + 1
    end
  end
  if exact then
    hashed = false
  elseif not hashed then
    return {5, shortest}
  elseif named > 1 then
    return {4, named}
  end
end

-- The lock key: a lockctl lock, another client's SET NX lock, a Redisson
-- hash lock.
local t = redis.call('TYPE', key)['ok']
local other
if t == 'string' or (t == 'hash' and redis.call('HLEN', key) <= 64) then
  local pttl = redis.call('PTTL', key)
  local body, token, kind, owner, fence
  -- A read-write lock's mode, its holds, and the count of the token's.
  local rwmode, holds, count = false, 1, '1'
  if t == 'string' then
    body = redis.call('GET', key)
    kind, token, owner, fence = describe(body)
  else
    -- Redisson: one field "uuid:threadId" per holder, or a read-write
    -- lock's mode and holds.
    body = redis.call('HGETALL', key)
    kind = 'redisson'
    local plain = redisson(body)
    rwmode = not plain and rwlock(body)
    if plain or rwmode then
      for i = 1, #body, 2 do
        if body[i] ~= 'mode' and matches(body[i]) then
          token, count = body[i], body[i + 1]
        end
      end
      owner = token
      if rwmode then
        holds = #body / 2 - 1
        owner = token and rwThread(token)
      end
    else
      other = {3, t}
    end
  end
  if token and matches(token) then
    if check then
      return {1, t, body, pttl, kind, owner or '', token, fence or '0', false, math.max(holds - 1, 0), false, false, false}
    end
    local id = audit(kind, owner, token, fence, pttl)
    if rwmode then
      local left = releaseRW(id, body, token, count, rwmode)
      return {1, t, body, pttl, kind, owner, token, '0', id, left, refused, refusedOn, refusedCmd}
    end
    write(id, 'DEL', key)
    handOff(false)
    if kind == 'redisson' then
      -- Wake Redisson's waiters as its own unlock does.
      wakeRedisson(ARGV[8], ARGV[9])
    end
    return {1, t, body, pttl, kind, owner or '', token, fence or '0', id, 0, refused, refusedOn, refusedCmd}
  end
  other = other or {2, t, body, pttl, holds}
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
    if isShared(marked) then
      kind = 'shared'
    end
    if check then
      return {1, 'zset', body, pttl, kind, owner or '', token, fence or '0', false, #live / 2 - 1, false, false, false}
    end
    local id = audit(kind, owner, token, fence, pttl)
    write(id, 'ZREM', sem, token)
    -- The slot is free. Tidying up after it (pcall) cannot undo that, so
    -- a refusal here must not fail the script: a stale value is trimmed by
    -- lockctl's next acquire or release.
    redis.pcall('HDEL', vals, token)
    -- Both keys keep the TTL of the latest remaining slot, as lockctl's
    -- own release leaves them, or go with the last one.
    local last = redis.pcall('ZRANGE', sem, -1, -1, 'WITHSCORES')
    if last.err then
      -- Refused: the keys keep their TTL until lockctl's next acquire or
      -- release sets it again.
    elseif #last == 0 then
      redis.pcall('DEL', sem, vals)
    else
      local ttl = string.format('%d', math.max(1, tonumber(last[2]) - ms))
      redis.pcall('PEXPIRE', sem, ttl)
      redis.pcall('PEXPIRE', vals, ttl)
    end
    -- A semaphore slot lets one waiter in; a shared holder's, everyone.
    handOff(kind ~= 'shared')
    return {1, 'zset', body, pttl, kind, owner or '', token, fence or '0', id, #live / 2 - 1, refused, refusedOn, refusedCmd}
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

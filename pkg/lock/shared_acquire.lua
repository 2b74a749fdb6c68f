-- KEYS[1] the semaphore zset of the lock's name, which holds the shared
-- holders (token -> expiry in server ms); KEYS[2] their values (hash token ->
-- lockctl JSON value with "mode":"shared"); KEYS[3] fence counter; KEYS[4]
-- the lock key, where an exclusive holder lives; KEYS[5] the exclusive
-- acquirers waiting (zset token -> expiry in server ms); KEYS[6], KEYS[7]
-- the FIFO queue and its heartbeats (fifo_acquire.lua); KEYS[8] the shared
-- and semaphore acquirers waiting (wake.lua).
-- ARGV[1] token; ARGV[2] ttl in ms; ARGV[3] value prefix; ARGV[4] the
-- value's members after the fence; ARGV[5] '0', or for a FIFO waiter how
-- long in ms its place in the queue is kept without a new attempt; ARGV[6]
-- '1' when the caller named no owner (as acquire.lua's ARGV[5]), else '0';
-- ARGV[7] '0', or, for a caller that will wait when refused (and is not
-- FIFO, whose queue lists it), how long in ms it stays listed in KEYS[8]
-- without a new attempt.
--
-- Replies: {1, fence, server ms} acquired: the fence is the counter's
-- current value (an exclusive acquisition increments it, a shared one does
-- not); {2, stored value, server ms} the token already held a shared slot,
-- its expiry refreshed; {0, type, ...} an exclusive holder, as held()
-- describes; {0, 'writers', shared holders, exclusive acquirers waiting}
-- refused because those go first; {4, limit} a semaphore of that limit holds
-- the name. A FIFO refusal carries two more elements, as fifo_acquire.lua's.
local z, vals, key, w, q, hb = KEYS[1], KEYS[2], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local token, fifo = ARGV[1], ARGV[5] ~= '0'
local ms, us = now()
-- Shared holders that died free their slot here, by their expiry.
trim(z, ms, {vals})
local exp = string.format('%d', ms + tonumber(ARGV[2]))
local function leave()
  unlistWaiter(KEYS[8], token, ms, ARGV[7])
  if fifo then
    redis.call('ZREM', q, token)
    redis.call('ZREM', hb, token)
    expire(hb, ms, {q, hb})
  end
end
if redis.call('ZSCORE', z, token) then
  -- A retry after a lost reply.
  redis.call('ZADD', z, exp, token)
  expire(z, ms, {z, vals})
  leave()
  -- As acquire.lua: the caller's members replace the stored ones.
  local v = redis.call('HGET', vals, token) or ''
  local nv = withRenewed(withMembers(v, ARGV[4], ARGV[6] == '1'), ms)
  if nv ~= v then
    redis.call('HSET', vals, token, nv)
  end
  return {2, nv, ms}
end
local rank, arrival = 0, 0
if fifo then
  -- Join at the tail (NX keeps the first arrival), refresh the heartbeat.
  trim(hb, ms, {q})
  redis.call('ZADD', q, 'NX', string.format('%d', us), token)
  redis.call('ZADD', hb, string.format('%d', ms + tonumber(ARGV[5])), token)
  expire(hb, ms, {q, hb})
  rank = redis.call('ZRANK', q, token)
  arrival = tonumber(redis.call('ZSCORE', q, token))
end
local function refuse(r)
  listWaiter(KEYS[8], token, ms, ARGV[7])
  if fifo then
    table.insert(r, rank)
    table.insert(r, arrival)
  end
  return r
end
local t = redis.call('TYPE', key)['ok']
if t ~= 'none' then
  return refuse(held(0, key, t))
end
local n = redis.call('ZCARD', z)
if n > 0 then
  local first = redis.call('ZRANGE', z, 0, 0)
  local fv = redis.call('HGET', vals, first[1]) or ''
  if slotKind(fv) ~= 'shared' then
    return {4, tonumber(valueLimit(fv) or '1')}
  end
end
-- Writers never starve: while an exclusive acquirer waits, no new shared
-- holder enters. A FIFO waiter lets pass only those that arrived after it
-- in the queue; one without a place in the queue (not FIFO) goes first.
trim(w, ms, {})
local waiting = 0
if fifo then
  for _, x in ipairs(redis.call('ZRANGE', w, 0, -1)) do
    local r = redis.call('ZRANK', q, x)
    if not r or r < rank then
      waiting = waiting + 1
    end
  end
else
  waiting = redis.call('ZCARD', w)
end
if waiting > 0 then
  return refuse({0, 'writers', n, waiting})
end
-- The current fence: the counter as the last exclusive acquisition (or
-- fence next) left it. Only a missing counter (never used, or lost to a
-- restart, failover or eviction) is started, from the clock floor, so that
-- the fence is still above every one issued before.
local fence = redis.call('GET', KEYS[3])
if not (fence and string.find(fence, '^[1-9]%d*$')) then
  fence = next_fence(KEYS[3])
end
local v = newValue(ARGV[3], fence, ARGV[4], ms)
redis.call('ZADD', z, exp, token)
redis.call('HSET', vals, token, v)
expire(z, ms, {z, vals})
leave()
return {1, fence, ms}

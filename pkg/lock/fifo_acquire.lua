-- KEYS[1] lock key; KEYS[2] fence counter; KEYS[3] queue (zset token ->
-- arrival in server µs); KEYS[4] waiters' heartbeats (zset token -> expiry
-- in server ms); KEYS[5], KEYS[6] the semaphore of the same name (zset,
-- values), which also holds shared holders; KEYS[7] the exclusive acquirers
-- waiting (acquire.lua).
-- ARGV[1] token; ARGV[2] ttl in ms; ARGV[3] value prefix; ARGV[4] the
-- value's members after the fence; ARGV[5] how long a waiter's place is kept
-- without a new attempt, in ms; ARGV[6] '1' when the caller named no owner
-- (as acquire.lua's ARGV[5]), else '0'.
--
-- Replies as acquire.lua, except that a refusal carries two more elements:
-- {0, type, [value|fields, pttl,] waiters ahead, arrival}; type 'none' means
-- the lock is free but earlier waiters go first. arrival is the waiter's
-- score in the queue (server µs), which orders it among the waiters of its
-- own process (hub.go).
local key, q, hb, w = KEYS[1], KEYS[3], KEYS[4], KEYS[7]
local sem = semHeld(KEYS[5], KEYS[6])
if sem and sem[2] ~= 'shared' then
  -- A semaphore: no place in the queue, no waiters ahead, no arrival.
  table.insert(sem, 0)
  table.insert(sem, 0)
  return sem
end
local ms, us = now()
-- A waiter that stopped trying (killed, partitioned) loses its place when its
-- heartbeat runs out, so it never blocks those behind it for longer.
trim(hb, ms, {q})
local token = ARGV[1]
local function leave()
  redis.call('ZREM', q, token)
  redis.call('ZREM', hb, token)
  expire(hb, ms, {q, hb})
  if redis.call('ZREM', w, token) > 0 then
    expire(w, ms, {w})
  end
end
local t = redis.call('TYPE', key)['ok']
if t == 'string' then
  local v = redis.call('GET', key)
  if owns(v, token, ARGV[3]) then
    -- As acquire.lua: the caller's members replace the stored ones.
    local nv = withRenewed(withMembers(v, ARGV[4], ARGV[6] == '1'), ms)
    if nv ~= v then
      redis.call('SET', key, nv, 'PX', ARGV[2])
    else
      redis.call('PEXPIRE', key, ARGV[2])
    end
    leave()
    return {2, nv, ms}
  end
end
-- Join at the tail (NX keeps the first arrival time), refresh the heartbeat.
redis.call('ZADD', q, 'NX', string.format('%d', us), token)
local hbExp = string.format('%d', ms + tonumber(ARGV[5]))
redis.call('ZADD', hb, hbExp, token)
local ahead = redis.call('ZRANK', q, token)
if t == 'none' and ahead == 0 and not sem then
  local fence = next_fence(KEYS[2])
  local v = newValue(ARGV[3], fence, ARGV[4], ms)
  redis.call('SET', key, v, 'NX', 'PX', ARGV[2])
  leave()
  return {1, fence, ms}
end
expire(hb, ms, {q, hb})
-- Refused: a waiting exclusive acquirer keeps new shared holders out
-- (shared_acquire.lua), for as long as its place in the queue.
redis.call('ZADD', w, hbExp, token)
expire(w, ms, {w})
local arrival = tonumber(redis.call('ZSCORE', q, token))
local r
if sem then
  r = sem
elseif t == 'none' then
  return {0, 'none', ahead, arrival}
else
  r = held(0, key, t)
end
table.insert(r, ahead)
table.insert(r, arrival)
return r

-- A release that hands the lock to a waiter of the releasing process
-- (handoff.go) in the same call, when that waiter is the one a release
-- would let in: the waiter learns its fence from the releaser, and the
-- hand-off costs the release's round trip only.
--
-- KEYS as release.lua's first six: KEYS[1] lock key; KEYS[2] its semaphore;
-- KEYS[3], KEYS[4] the FIFO queue and its heartbeats; KEYS[5] the exclusive
-- acquirers waiting; KEYS[6] the shared and semaphore acquirers waiting;
-- then KEYS[7] the fence counter. ARGV[1] token; ARGV[2] the wake-up
-- channel; ARGV[3] the base of the waiters' own streams and channels
-- (wake.lua); ARGV[4] the waiter's token; ARGV[5] its ttl in ms; ARGV[6] its
-- value's members after the fence (acquire.lua's ARGV[3]); ARGV[7] '1' when
-- it waits in the FIFO queue, else '0'.
--
-- Replies as release.lua, except that {1, fence, server ms} says that the
-- lock was released and granted to the waiter with that fence, and {1, n}
-- that it was released and n listed waiters were woken. The waiter
-- gets the lock only when nobody else may take it first: for a FIFO waiter,
-- when it is the live head of the queue; for another, when nobody waits in
-- the queue or among the shared and semaphore acquirers, and no exclusive
-- acquirer listed before it is still listed (wake.lua wakes that one).
-- Otherwise the release wakes whom release.lua wakes.
local key, q, hb, w, s = KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local freed = freeOwn(key, KEYS[2], ARGV[1])
if freed then
  return freed
end
local tok = ARGV[4]
local function mayTake()
  if ARGV[7] == '1' then
    if redis.call('EXISTS', KEYS[2]) == 1 then
      return false
    end
    -- As fifo_acquire.lua: a waiter whose heartbeat ran out has no place.
    trim(hb, now(), {q})
    return redis.call('ZRANGE', q, 0, 0)[1] == tok
  end
  -- The usual case, nobody listed at all, costs one call.
  local n = redis.call('EXISTS', KEYS[2], q, s, w)
  if n == 0 then
    return true
  end
  if n > 1 or redis.call('EXISTS', w) == 0 then
    return false
  end
  local first = redis.call('ZRANGEBYSCORE', w, '(' .. string.format('%d', now()), '+inf', 'LIMIT', 0, 1)[1]
  return first == nil or first == tok
end
if mayTake() then
  local fence, ms = next_fence(KEYS[7])
  redis.call('SET', key, newValue(tokenPrefix(tok), fence, ARGV[6], ms), 'PX', ARGV[5])
  if ARGV[7] == '1' then
    redis.call('ZREM', q, tok)
    redis.call('ZREM', hb, tok)
    expire(hb, ms, {q, hb})
  end
  if redis.call('ZREM', w, tok) > 0 then
    expire(w, ms, {w})
  end
  return {1, fence, ms}
end
local err, refused, command = wake(ARGV[2], ARGV[3], q, hb, w, s, false)
if err then
  return {5, err, refused, command or false}
end
if woke > 0 then
  -- Released, and listed waiters woken: the releaser's own waiters that
  -- are not listed sleep on.
  return {1, woke}
end
return {1}

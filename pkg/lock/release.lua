-- KEYS[1] lock key; KEYS[2] its semaphore (lock.AuxKey KindSem). ARGV[1]
-- token; ARGV[2] the wake-up channel waiters subscribe to. Replies: {0} no
-- lock and no semaphore; {3} no lock, but a semaphore; {1} deleted; {5,
-- error} deleted, but the server refused the wake-up (see below); {4,
-- holds left} the token had re-entered: one hold released, the lock stays
-- with its TTL; {2, ...} another holder, as held() describes.
local key = KEYS[1]
-- pcall: see renew.lua.
local v = redis.pcall('GET', key)
if v == false then
  -- No plain lock: the token may hold a slot of the semaphore of the same
  -- name (KEYS[2]); say so, and the caller asks the semaphore. A plain
  -- "not held" stays one round trip.
  if redis.call('EXISTS', KEYS[2]) == 1 then
    return {3}
  end
  return {0}
end
if type(v) == 'string' then
  if owns(v, ARGV[1], tokenPrefix(ARGV[1])) then
    local n = holds(v)
    if n > 1 then
      redis.call('SET', key, withHolds(v, n - 1), 'KEEPTTL')
      return {4, n - 1}
    end
    redis.call('DEL', key)
    -- Waiters sleep until this message (or their holder's TTL), so the
    -- hand-off costs one round trip instead of a polling interval. Best
    -- effort: an ACL without PUBLISH or the channel must not turn a done
    -- release into an error (a script stops at a refused call, after its
    -- writes), so the refusal is returned for the caller to warn about.
    local r = redis.pcall('PUBLISH', ARGV[2], 'released')
    if type(r) == 'table' and r.err then
      return {5, r.err}
    end
    return {1}
  end
  return held(2, key, 'string', v)
end
return held(2, key, redis.call('TYPE', key)['ok'])

-- KEYS[1] lock key; KEYS[2] its semaphore (lockwire.AuxKey KindSem). ARGV[1]
-- token; ARGV[2] ttl in ms, 0 for the TTL the lease was taken with.
-- Replies: {0} no lock and no semaphore; {3} no lock, but a
-- semaphore (never re-created); {1, ttl in ms} renewed; {4} ttl 0, but the
-- value records no TTL; {2, ...} another holder, as held() describes.
-- A renewal records the server's time in the value (withRenewed), so that
-- inspect can tell a holder that stopped renewing.
local key = KEYS[1]
-- pcall: a key of another type makes GET fail, which costs a TYPE only
-- then, not on every call (each redis.call is a measurable share of a
-- script's cost).
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
    local ttl = ARGV[2]
    if ttl == '0' then
      ttl = leaseTTL(v)
      if not ttl then
        return {4}
      end
    end
    local t = redis.call('TIME')
    local nv = withRenewed(v, tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
    if nv ~= v then
      redis.call('SET', key, nv, 'PX', ttl)
    else
      -- A foreign plain lock whose whole value is the token.
      redis.call('PEXPIRE', key, ttl)
    end
    return {1, tonumber(ttl)}
  end
  return held(2, key, 'string', v)
end
return held(2, key, redis.call('TYPE', key)['ok'])

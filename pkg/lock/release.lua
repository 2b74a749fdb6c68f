-- KEYS[1] lock key; KEYS[2] its semaphore (lockwire.AuxKey KindSem); KEYS[3],
-- KEYS[4] the FIFO queue and its heartbeats; KEYS[5] the exclusive
-- acquirers waiting; KEYS[6] the shared and semaphore acquirers waiting
-- (wake.lua). ARGV[1] token; ARGV[2] the wake-up channel waiters subscribe
-- to; ARGV[3] the base of the waiters' own streams and channels
-- (wake.lua). KEYS[7], when given, is the event stream (pkg/events), and
-- the reply is {events written, reply} (record, below). Replies: {0} no lock and no semaphore; {3} no
-- lock, but a semaphore; {1} deleted; {5, error, channel, command}
-- deleted, but the server refused the wake-up (wake.lua); {4, holds left} the token had re-entered:
-- one hold released, the lock stays with its TTL; {2, ...} another holder,
-- as held() describes.
local function release()
  local key = KEYS[1]
  -- pcall: see renew.lua.
  local v = redis.pcall('GET', key)
  if v == false then
    -- No plain lock: the token may hold a slot of the semaphore of the same
    -- name (KEYS[2]); say so, and the caller asks the semaphore. A plain
    -- "not held" stays one round trip.
    -- A refused EXISTS (pcall) asks the semaphore too: it writes nothing.
    local sem = redis.pcall('EXISTS', KEYS[2])
    if sem == 1 or type(sem) == 'table' then
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
      -- Waiters sleep until this wake-up (or their holder's TTL), so the
      -- hand-off costs one round trip instead of a polling interval; it
      -- wakes the waiters that can take the lock where any is listed.
      local err, refused, command = wake(ARGV[2], ARGV[3], KEYS[3], KEYS[4], KEYS[5], KEYS[6], false, listed)
      if err then
        return {5, err, refused, command or false}
      end
      return {1}
    end
    return held(2, key, 'string', v)
  end
  return held(2, key, redis.call('TYPE', key)['ok'])
end
-- record: release_fast.lua.
local r = release()
if KEYS[7] == nil then
  return r
end
return {record(r[1]), r}

-- KEYS[1] lock key; KEYS[2] its semaphore (lockwire.AuxKey KindSem); KEYS[3],
-- KEYS[4] the FIFO queue and its heartbeats; KEYS[5] the exclusive
-- acquirers waiting; KEYS[6] the shared and semaphore acquirers waiting
-- (wake.lua). ARGV[1] token; ARGV[2] the wake-up channel waiters subscribe
-- to; ARGV[3] the base of the waiters' own streams and channels
-- (wake.lua). KEYS[7], when given, is the event stream (pkg/events), and
-- the reply is {events written, reply} (record, release_fast.lua).
-- Replies: {1} deleted; {5, error, channel, command} deleted, but the
-- server refused the wake-up (wake.lua); the others as freeOwn (holder.lua)
-- describes them: {0} not held, {3} a semaphore, {4, holds left}, {2, ...}.
local function release()
  local r = freeOwn(KEYS[1], KEYS[2], ARGV[1])
  if r then
    return r
  end
  -- Waiters sleep until this wake-up (or their holder's TTL), so the
  -- hand-off costs one round trip instead of a polling interval; it wakes
  -- the waiters that can take the lock where any is listed.
  local err, refused, command = wake(ARGV[2], ARGV[3], KEYS[3], KEYS[4], KEYS[5], KEYS[6], false, listed)
  if err then
    return {5, err, refused, command or false}
  end
  return {1}
end
-- record: release_fast.lua.
local r = release()
if KEYS[7] == nil then
  return r
end
return {record(r[1]), r}

-- Prelude of the scripts that free a lock or give up a place among its
-- waiters (prepended in Go): whom the wake-up wakes.
--
-- wake publishes the message that gets the lock to the waiter who can take
-- it, without waking the rest: 'next <token>' on that waiter's own channel
-- (base, ':', its token; lockwire.WaiterChannel) wakes it alone, in
-- whichever process it waits; 'released' on channel wakes every process's
-- first waiter, as a release did before waiters were listed.
--   q, hb: the FIFO queue (token -> arrival) and its heartbeats (token ->
--          expiry in server ms): only its head may take the lock, so it is
--          the one woken, while its heartbeat lives;
--   w:     the exclusive acquirers waiting (token -> expiry in server ms):
--          the one listed longest ago is woken. A woken waiter's entry is
--          shortened to a grace period: alive, its attempt lists it again
--          (or takes the lock); dead, the next release passes it over.
-- Shared and semaphore waiters are not listed (several may enter at once),
-- so with nobody listed every process wakes one waiter. A FIFO head that is
-- not an exclusive acquirer is a shared one: it and those after it may
-- enter together, so everyone is woken.
--
-- The PUBLISH is best effort: an ACL without PUBLISH or the channel must not
-- turn a done release into an error (a script stops at a refused call,
-- after its writes), so wake returns the refusal and the channel refused,
-- or nil, for the caller to pass on ({5, error, channel}).
local wakeGraceMS = 500
local function publish(channel, msg)
  local r = redis.pcall('PUBLISH', channel, msg)
  if type(r) == 'table' and r.err then
    return r.err, channel
  end
  return nil
end
local function wake(channel, base, q, hb, w)
  if redis.call('EXISTS', q, w) == 0 then
    return publish(channel, 'released')
  end
  local t = redis.call('TIME')
  local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local heads = redis.call('ZRANGE', q, 0, 7)
  for _, tok in ipairs(heads) do
    local beat = redis.call('ZSCORE', hb, tok)
    if beat and tonumber(beat) > ms then
      if redis.call('ZSCORE', w, tok) then
        return publish(base .. ':' .. tok, 'next ' .. tok)
      end
      return publish(channel, 'released')
    end
  end
  local next = redis.call('ZRANGEBYSCORE', w, '(' .. string.format('%d', ms), '+inf', 'LIMIT', 0, 1)
  if #next == 0 then
    return publish(channel, 'released')
  end
  redis.call('ZADD', w, 'XX', 'LT', string.format('%d', ms + wakeGraceMS), next[1])
  return publish(base .. ':' .. next[1], 'next ' .. next[1])
end

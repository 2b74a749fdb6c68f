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
-- The wake-up is best effort: an ACL without PUBLISH or the channel, or
-- without a command that picks the waiter (EXISTS, ZRANGE ...), must not
-- turn a done release into an error (a script stops at a refused call,
-- after its writes). wake returns the refusal, the channel refused (''
-- when the message went out) and, when it was not the PUBLISH, the command
-- refused, or nil, for the caller to pass on ({5, error, channel,
-- command}). When picking the waiter is refused, every process's first
-- waiter is woken instead.
local wakeGraceMS = 500
local function publish(channel, msg)
  local r = redis.pcall('PUBLISH', channel, msg)
  if type(r) == 'table' and r.err then
    return r.err, channel
  end
  return nil
end
-- pick is whom to wake: the channel and the message. step names the
-- command it is at, for a refusal.
local step
local function pick(channel, base, q, hb, w)
  step = 'EXISTS'
  if redis.call('EXISTS', q, w) == 0 then
    return channel, 'released'
  end
  step = 'TIME'
  local t = redis.call('TIME')
  local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  step = 'ZRANGE'
  local heads = redis.call('ZRANGE', q, 0, 7)
  for _, tok in ipairs(heads) do
    step = 'ZSCORE'
    local beat = redis.call('ZSCORE', hb, tok)
    if beat and tonumber(beat) > ms then
      if redis.call('ZSCORE', w, tok) then
        return base .. ':' .. tok, 'next ' .. tok
      end
      return channel, 'released'
    end
  end
  step = 'ZRANGEBYSCORE'
  local next = redis.call('ZRANGEBYSCORE', w, '(' .. string.format('%d', ms), '+inf', 'LIMIT', 0, 1)
  if #next == 0 then
    return channel, 'released'
  end
  step = 'ZADD'
  redis.call('ZADD', w, 'XX', 'LT', string.format('%d', ms + wakeGraceMS), next[1])
  return base .. ':' .. next[1], 'next ' .. next[1]
end
local function wake(channel, base, q, hb, w)
  local ok, to, msg = pcall(pick, channel, base, q, hb, w)
  if ok then
    return publish(to, msg)
  end
  local err = type(to) == 'table' and to.err or tostring(to)
  if string.sub(err, 1, 10) == 'WRONGTYPE ' then
    -- Not a refusal: someone else wrote a waiters' key. That is the
    -- data error it always was.
    error(to)
  end
  local _, refused = publish(channel, 'released')
  return err, refused or '', step
end

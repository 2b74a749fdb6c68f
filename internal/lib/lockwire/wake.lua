-- Prelude of the scripts that free a lock or give up a place among its
-- waiters (prepended in Go): whom the wake-up wakes.
--
-- A waiter sleeps on a stream of its own (base, ':', its token;
-- lockwire.WakeKey), which it reads with XREAD BLOCK on the one connection
-- it makes its attempts on: wake appends to the stream of each waiter that
-- can take the lock now ('1'), and to that of the waiter next in line
-- ('2'), which looks again after wakeGraceMS, in case the first one died.
-- A wake-up stream expires wakeKeepMS after its last entry, so one nobody
-- reads does not linger.
--
-- wake also publishes, as releases always did, for waiters that listen on
-- pub/sub (lockctl's earlier versions, and a process's waiters beyond the
-- ones it lets block on a connection each): 'next <token>' on the named
-- waiter's own channel (the same name as its stream) wakes it alone, in
-- whichever process it waits; 'released' on channel wakes every process's
-- first waiter.
--   q, hb: the FIFO queue (token -> arrival) and its heartbeats (token ->
--          expiry in server ms): only its head may take the lock, so it is
--          the one woken, while its heartbeat lives; a head that is a
--          shared waiter is woken with the shared waiters right behind it;
--   w:     the exclusive acquirers waiting (token -> expiry in server ms):
--          the one listed longest ago is woken. A woken waiter's entry is
--          shortened to a grace period: alive, its attempt lists it again
--          (or takes the lock); dead, the next release passes it over, and
--          the waiter told to look again after the grace period takes the
--          lock meanwhile;
--   s:     shared and semaphore acquirers waiting (token -> expiry in
--          server ms), which are not in w: with no FIFO head and no
--          exclusive acquirer waiting, every one of them is woken, or, when
--          one semaphore slot was freed (one), the one listed longest ago,
--          its entry shortened as w's is.
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
local wakeKeepMS = 10000
local function publish(channel, msg)
  local r = redis.pcall('PUBLISH', channel, msg)
  if type(r) == 'table' and r.err then
    return r.err, channel
  end
  return nil
end
-- push appends a wake-up of kind ('1' now, '2' after the grace period) to
-- the stream of waiter tok. Best effort too: a waiter whose stream the
-- server refuses finds the lock by its own deadline.
local function push(base, tok, kind)
  local k = base .. ':' .. tok
  local r = redis.pcall('XADD', k, 'MAXLEN', '4', '*', 'w', kind)
  if type(r) == 'table' and r.err then
    return
  end
  redis.pcall('PEXPIRE', k, wakeKeepMS)
end
-- pick is whom to wake: the channel and the message, the tokens woken now
-- and the one told to look again after the grace period (or nil). step
-- names the command it is at, for a refusal. listed is the EXISTS count of
-- q, w and s when the caller has it (release_fast.lua), else nil (or the
-- refusal of that EXISTS), and pick counts them itself.
local step
local function pick(channel, base, q, hb, w, s, one, listed)
  step = 'EXISTS'
  if type(listed) ~= 'number' then
    listed = redis.call('EXISTS', q, w, s)
  end
  if listed == 0 then
    return channel, 'released', {}, nil
  end
  step = 'TIME'
  local t = redis.call('TIME')
  local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local now, grace = '(' .. string.format('%d', ms), string.format('%d', ms + wakeGraceMS)
  step = 'ZRANGE'
  local heads = redis.call('ZRANGE', q, 0, 7)
  local live = {}
  for _, tok in ipairs(heads) do
    step = 'ZSCORE'
    local beat = redis.call('ZSCORE', hb, tok)
    if beat and tonumber(beat) > ms then
      live[#live + 1] = tok
    end
  end
  if #live > 0 then
    local head = live[1]
    if redis.call('ZSCORE', w, head) then
      return base .. ':' .. head, 'next ' .. head, {head}, nil
    end
    local go = {}
    for _, tok in ipairs(live) do
      if redis.call('ZSCORE', w, tok) then
        break
      end
      go[#go + 1] = tok
    end
    return channel, 'released', go, nil
  end
  step = 'ZRANGEBYSCORE'
  local next = redis.call('ZRANGEBYSCORE', w, now, '+inf', 'LIMIT', 0, 2)
  if #next > 0 then
    step = 'ZADD'
    redis.call('ZADD', w, 'XX', 'LT', grace, next[1])
    local backup = next[2]
    if not backup then
      step = 'ZRANGEBYSCORE'
      backup = redis.call('ZRANGEBYSCORE', s, now, '+inf', 'LIMIT', 0, 1)[1]
    end
    return base .. ':' .. next[1], 'next ' .. next[1], {next[1]}, backup
  end
  step = 'ZRANGEBYSCORE'
  local n = 32
  if one then
    n = 2
  end
  local sleepers = redis.call('ZRANGEBYSCORE', s, now, '+inf', 'LIMIT', 0, n)
  if one and #sleepers > 0 then
    step = 'ZADD'
    redis.call('ZADD', s, 'XX', 'LT', grace, sleepers[1])
    return channel, 'released', {sleepers[1]}, sleepers[2]
  end
  return channel, 'released', sleepers, nil
end
-- woke counts the listed waiters the last wake woke by name, for a
-- caller that wakes others itself when nobody listed was (handoff.lua).
local woke = 0
local function wake(channel, base, q, hb, w, s, one, listed)
  local ok, to, msg, go, backup = pcall(pick, channel, base, q, hb, w, s, one, listed)
  if ok then
    woke = #go
    for _, tok in ipairs(go) do
      push(base, tok, '1')
    end
    if backup then
      push(base, backup, '2')
    end
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

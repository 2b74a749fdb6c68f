-- KEYS[1] lock key; KEYS[2] its fence counter (same cluster slot, no TTL);
-- KEYS[3], KEYS[4] the semaphore of the same name (zset, values), which
-- also holds shared holders (shared.go); KEYS[5] the exclusive acquirers
-- waiting (zset token -> expiry in server ms).
-- ARGV[1] token; ARGV[2] ttl in ms; ARGV[3] the value's members after the
-- fence: ,"owner":...[,"note":...]. The value starts {"token":"<token>",
-- built here (newValue) rather than sent with every call. ARGV[4] '0',
-- or, for a caller that will wait when refused, how long in ms its place
-- among the waiting exclusive acquirers is kept without a new attempt.
-- ARGV[5] '1' when the caller named no owner: a re-acquire by the holding
-- token keeps the stored owner (withMembers), else '0'.
--
-- Replies: {1, fence, server ms} acquired; {2, stored value, server ms} the
-- same token already held it (a retry after a lost reply, or a re-acquire):
-- its ttl refreshed and ARGV[3]'s members (note, owner, ...) stored in place
-- of the old ones (withMembers), its fence and acquisition time kept, its
-- renewal time moved (withRenewed);
-- {0, type, ...} refused, as held() describes, or as semHeld() does.
local key, token, w = KEYS[1], ARGV[1], KEYS[5]
local function grant()
  -- The fence only once the SET is certain, so refused attempts burn none.
  local fence, ms = next_fence(KEYS[2])
  local v = newValue(tokenPrefix(token), fence, ARGV[3], ms)
  redis.call('SET', key, v, 'NX', 'PX', ARGV[2])
  return {1, fence, ms}
end
-- The usual case, neither the lock, nor a semaphore or shared holders of the
-- same name, nor exclusive acquirers waiting: one EXISTS counted all three
-- (busy, acquire_fast.lua, which took that case itself unless the fence
-- counter was ahead of the clock). It is exactly the case in which
-- semHeld() finds no holder, TYPE says 'none' and nobody waits, so the
-- checks below are only skipped when they could not refuse.
if busy == 0 then
  return grant()
end
-- A waiting exclusive acquirer keeps new shared holders out until it is in
-- (shared.go): it goes on the list at every refusal, and off it once the
-- lock is its own. The list carries the TTL of its latest entry. (Defined
-- here, past the usual case, so that it costs that case nothing.)
local function nowMS()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function expireList(ms)
  local last = redis.call('ZRANGE', w, -1, -1, 'WITHSCORES')
  if #last == 0 then
    return
  end
  redis.call('PEXPIRE', w, string.format('%d', math.max(1, tonumber(last[2]) - ms)))
end
local function refuse(r)
  if ARGV[4] ~= '0' then
    local ms = nowMS()
    redis.call('ZADD', w, string.format('%d', ms + tonumber(ARGV[4])), token)
    expireList(ms)
  end
  return r
end
local function unlist()
  if redis.call('ZREM', w, token) > 0 then
    expireList(nowMS())
  end
end
local sem = semHeld(KEYS[3], KEYS[4])
if sem then
  return refuse(sem)
end
local t = redis.call('TYPE', key)['ok']
if t == 'none' then
  unlist()
  return grant()
end
if t == 'string' then
  local v = redis.call('GET', key)
  if owns(v, token, tokenPrefix(token)) then
    local ms = nowMS()
    local nv = withRenewed(withMembers(v, ARGV[3], ARGV[5] == '1'), ms)
    if nv ~= v then
      redis.call('SET', key, nv, 'PX', ARGV[2])
    else
      redis.call('PEXPIRE', key, ARGV[2])
    end
    unlist()
    return {2, nv, ms}
  end
  return refuse(held(0, key, t, v))
end
return refuse(held(0, key, t))

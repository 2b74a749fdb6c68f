-- Takes a set of locks in one step: every name, or none of them.
--
-- KEYS, eight per name i from 8(i-1)+1: the lock key; its fence counter;
-- its semaphore (zset, values), which also holds shared holders; the
-- exclusive acquirers waiting (zset token -> expiry in server ms); its FIFO
-- queue and heartbeats; its shared and semaphore waiters (wake.lua). All in
-- one Redis Cluster slot.
-- ARGV[1] token; ARGV[2] ttl in ms; ARGV[3] the value's members after the
-- fence (acquire.lua); ARGV[4] '0', or, for a caller that will wait when
-- refused, how long in ms its place among each name's waiting exclusive
-- acquirers is kept without a new attempt; ARGV[5] '1' when the caller
-- named no owner (acquire.lua). Then, per name i, ARGV[4+2i] its release
-- channel and ARGV[5+2i] the base of its waiters' own channels.
--
-- Replies: {1, server ms, fence of name 1, ..., fence of name n}: every
-- name is the token's now, each with a fence from its own counter; a name
-- the token held already (a retry after a lost reply) keeps its fence and
-- gets its TTL refreshed and ARGV[3]'s members, as acquire.lua does.
-- {0, i, type, ...}: name i (the first name refused) is held, as held() or
-- semHeld() describes; nothing was taken.
local token, n = ARGV[1], #KEYS / 8
local prefix = tokenPrefix(token)
local function k(i, j)
  return KEYS[8 * (i - 1) + j]
end
local function nowMS()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function expireList(w, ms)
  local last = redis.call('ZRANGE', w, -1, -1, 'WITHSCORES')
  if #last == 0 then
    return
  end
  redis.call('PEXPIRE', w, string.format('%d', math.max(1, tonumber(last[2]) - ms)))
end

-- Every name is looked at before anything is written: the step either
-- takes them all or takes none.
local mine, refused, first = {}, {}, nil
for i = 1, n do
  local key = k(i, 1)
  local r = semHeld(k(i, 3), k(i, 4))
  if not r then
    local t = redis.call('TYPE', key)['ok']
    if t == 'string' then
      local v = redis.call('GET', key)
      if owns(v, token, prefix) then
        mine[i] = v
      else
        r = held(0, key, t, v)
      end
    elseif t ~= 'none' then
      r = held(0, key, t)
    end
  end
  if r then
    refused[i] = true
    if not first then
      table.insert(r, 2, i)
      first = r
    end
  end
end

if not first then
  -- Whatever would make a write below fail must fail here, before the
  -- first one: a script that stops half-way keeps what it wrote.
  for i = 1, n do
    local ft = redis.call('TYPE', k(i, 2))['ok']
    if ft == 'string' then
      if not string.find(redis.call('GET', k(i, 2)), '^-?%d+$') then
        return redis.error_reply('ERR value is not an integer or out of range')
      end
    elseif ft ~= 'none' then
      return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
    end
    local wt = redis.call('TYPE', k(i, 5))['ok']
    if wt ~= 'none' and wt ~= 'zset' then
      return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
    end
  end
  local fences, ms = {}, nil
  for i = 1, n do
    local key, w = k(i, 1), k(i, 5)
    if redis.call('ZREM', w, token) > 0 then
      expireList(w, nowMS())
    end
    if mine[i] then
      local v = mine[i]
      ms = ms or nowMS()
      local nv = withRenewed(withMembers(v, ARGV[3], ARGV[5] == '1'), ms)
      if nv ~= v then
        redis.call('SET', key, nv, 'PX', ARGV[2])
      else
        redis.call('PEXPIRE', key, ARGV[2])
      end
      fences[i] = valueFence(nv) or '0'
    else
      local fence, t = next_fence(k(i, 2))
      ms = t
      redis.call('SET', key, newValue(prefix, fence, ARGV[3], t), 'NX', 'PX', ARGV[2])
      fences[i] = fence
    end
  end
  return {1, ms or nowMS(), unpack(fences)}
end

-- Refused. A waiter goes on the list of every name held (which keeps new
-- shared holders out of it, and by which its release wakes this waiter),
-- and off the list of every name it could have had: a release that woke it
-- there, for nothing, wakes the next waiter of that name instead.
local ms
for i = 1, n do
  local w = k(i, 5)
  if refused[i] then
    if ARGV[4] ~= '0' then
      ms = ms or nowMS()
      redis.call('ZADD', w, string.format('%d', ms + tonumber(ARGV[4])), token)
      expireList(w, ms)
    end
  elseif redis.call('ZREM', w, token) > 0 then
    ms = ms or nowMS()
    expireList(w, ms)
    if not mine[i] then
      wake(ARGV[4 + 2 * i], ARGV[5 + 2 * i], k(i, 6), k(i, 7), w, k(i, 8), false)
    end
  end
end
return first

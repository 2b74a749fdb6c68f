-- Sliding log: one sorted set, one member per admitted unit of cost, scored
-- by server microseconds. Scores are made strictly increasing (a call in the
-- same microsecond as the newest entry, or after the clock stepped back,
-- takes newest+1), and the member is the score itself, so members never
-- collide and no randomness is needed. The window is (now-window, now].
-- One more member, scored +inf, is the configuration the entries were
-- written under (see the prelude; absent in older state).
-- Time is cut in stretches one window long (microseconds counted from 0).
-- Entries that left the window are trimmed, and the TTL set, by the call
-- whose newest entry opens a stretch, not by every call: the count is taken
-- over the window alone, so stale entries never count, no more than two
-- windows' worth are ever kept, and the TTL, the end of the stretch after
-- the newest entry's, outlasts every entry's window by less than one more.
-- KEYS[1] key; ARGV: window (us), limit, cost.
-- Reply: {allowed, remaining, retry after, reset after}, times in
-- microseconds; for a call admitted at now (its entry scored now), just the
-- count of entries in the window before it, which with the arguments tells
-- Go the rest.
local key = KEYS[1]
local window = ARGV[1] + 0
local limit = ARGV[2] + 0
local cost = ARGV[3] + 0

-- The last two members. On a log written under this configuration they
-- are the newest entry (if any: its member is its score) and the
-- configuration: one command, without scores, tells that the log is this
-- configuration's and where it ends.
local tail = redis.pcall('ZRANGE', key, -2, -1)
if tail.err then return lib().failed(tail, key) end
local n = #tail
local stored, last
if tail[n] == cfg then
  stored = cfg
  if n == 2 then last = tail[1] + 0 end
elseif n > 0 then
  -- Another configuration's log, one written before configurations were
  -- stored, or a sorted set no limit wrote: read as before, with scores.
  tail = redis.call('ZRANGE', key, -2, -1, 'WITHSCORES')
  n = #tail
  stored = redis.call('ZRANGEBYSCORE', key, '+inf', '+inf', 'LIMIT', 0, 1)[1]
  if stored and stored ~= cfg then return {2, stored} end
  -- Entries are their own scores: a sorted set with another member is no
  -- log's (an application's), and is never trimmed or written into.
  local first = redis.call('ZRANGE', key, 0, 0)[1]
  if first ~= stored and not string.match(first, '^%d+$') then return lib().foreign(key) end
  if not stored then
    last = tail[n] + 0
  elseif n == 4 then
    last = tail[2] + 0
  end
end

-- Entries in the window, (now-window, now] (none lies later, but after the
-- clock stepped back); the configuration, scored +inf, is not one. Without
-- an entry (a new key) there is nothing to count. Scores are whole, so the
-- window starts at now-window+1; a score is read from a number as exactly
-- as from its digits.
local count = 0
if last then
  count = redis.call('ZCOUNT', key, now - window + 1, '+inf')
  if stored then count = count - 1 end
end

if count + cost > limit then
  -- The (count+cost-limit)-th oldest entry in the window must leave before
  -- cost fits; the newest (last) is in the window, as count > 0.
  local e = redis.call('ZRANGEBYSCORE', key, now - window + 1, '+inf', 'WITHSCORES', 'LIMIT', count + cost - limit - 1, 1)
  local oldest = tonumber(e[2])
  if not oldest or not last then return lib().wrongtype() end
  return {0, math.max(0, limit - count), oldest + window - now, last + window - now}
end

local ts = now
if last and last >= ts then ts = last + 1 end
local newest = ts + cost - 1
local stretch = newest - fmod(newest, window)
local opens = not stored or not last or stretch ~= last - fmod(last, window)
if opens and last then
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
end
if cost == 1 then
  local m = string.format('%d', ts)
  if stored then
    redis.call('ZADD', key, m, m)
  else
    redis.call('ZADD', key, m, m, '+inf', cfg)
  end
else
  local i = 0
  while i < cost do -- batches keep unpack below Lua's stack limit
    local args = {}
    local b = math.min(cost - i, 500)
    for j = 0, b - 1 do
      local m = string.format('%d', ts + i + j)
      args[#args + 1] = m
      args[#args + 1] = m
    end
    redis.call('ZADD', key, unpack(args))
    i = i + b
  end
  if not stored then redis.call('ZADD', key, '+inf', cfg) end
end
if opens then
  local ttl = stretch + 2 * window - now
  local px = fmod(ttl, 1000)
  if px > 0 then px = (ttl - px) / 1000 + 1 else px = ttl / 1000 end
  redis.call('PEXPIRE', key, px)
end
if ts == now then return count end
return {1, limit - count - cost, 0, newest + window - now}

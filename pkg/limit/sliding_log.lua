-- Sliding log: one sorted set, one member per admitted unit of cost, scored
-- by server microseconds. Scores are made strictly increasing (a call in the
-- same microsecond as the newest entry, or after the clock stepped back,
-- takes newest+1), and the member is the score itself, so members never
-- collide and no randomness is needed. The window is (now-window, now].
-- One more member, scored +inf, is the configuration the entries were
-- written under (see the prelude; absent in older state).
-- KEYS[1] key; ARGV: window (us), limit, cost.
local key = KEYS[1]
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])

local t = redis.call('TYPE', key)['ok']
if t ~= 'zset' and t ~= 'none' then return foreign(key) end
local stored = redis.call('ZRANGEBYSCORE', key, '+inf', '+inf', 'LIMIT', 0, 1)[1]
if stored and stored ~= cfg then return {2, stored} end
-- Entries are their own scores: a sorted set with another member is no
-- log's (an application's), and is never trimmed or written into.
local first = redis.call('ZRANGE', key, 0, 0)[1]
if first and first ~= stored and not string.match(first, '^%d+$') then return foreign(key) end

redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now - window))
local count = redis.call('ZCARD', key)
if stored then count = count - 1 end

-- The newest entry: the last member, or the one before the configuration.
local function newest()
  local i = -1
  if stored then i = -2 end
  local last = redis.call('ZRANGE', key, i, i, 'WITHSCORES')
  if last[2] then return tonumber(last[2]) end
  return nil
end

if count + cost > limit then
  -- The (count+cost-limit)-th oldest entry must leave before cost fits.
  local e = redis.call('ZRANGE', key, count + cost - limit - 1, count + cost - limit - 1, 'WITHSCORES')
  local oldest = tonumber(e[2])
  local last = newest()
  if not oldest or not last then return wrongtype() end
  return {0, limit, math.max(0, limit - count), oldest + window - now, last + window - now}
end

local ts = now
local last = newest()
if last and last >= ts then ts = last + 1 end
local i = 0
while i < cost do -- batches keep unpack below Lua's stack limit
  local args = {}
  local n = math.min(cost - i, 500)
  for j = 0, n - 1 do
    local m = string.format('%d', ts + i + j)
    args[#args + 1] = m
    args[#args + 1] = m
  end
  redis.call('ZADD', key, unpack(args))
  i = i + n
end
if not stored then redis.call('ZADD', key, '+inf', cfg) end
local reset = ts + cost - 1 + window - now
redis.call('PEXPIRE', key, cdiv(reset, 1000))
return {1, limit, limit - count - cost, 0, reset}

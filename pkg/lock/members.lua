-- Prelude of the semaphore and FIFO scripts (prepended in Go).

-- now returns the server's time in ms and in µs. Server time only: holders'
-- clocks never decide an expiry.
local function now()
  local t = redis.call('TIME')
  local s, us = tonumber(t[1]), tonumber(t[2])
  return s * 1000 + math.floor(us / 1000), s * 1000000 + us
end

-- trim removes the members of zset z whose expiry score has passed, and the
-- same members of each key in others (a zset or a hash). Returns how many.
local function trim(z, ms, others)
  local dead = redis.call('ZRANGEBYSCORE', z, '-inf', ms)
  if #dead == 0 then
    return 0
  end
  redis.call('ZREMRANGEBYSCORE', z, '-inf', ms)
  for _, k in ipairs(others) do
    local t = redis.call('TYPE', k)['ok']
    for i = 1, #dead, 1000 do
      local part = {unpack(dead, i, math.min(i + 999, #dead))}
      if t == 'zset' then
        redis.call('ZREM', k, unpack(part))
      elseif t == 'hash' then
        redis.call('HDEL', k, unpack(part))
      end
    end
  end
  return #dead
end

-- expire gives every key in keys the TTL of the latest expiry in zset z, so
-- that the auxiliary keys of a semaphore or queue vanish with their last
-- member and never linger as orphans.
local function expire(z, ms, keys)
  local last = redis.call('ZRANGE', z, -1, -1, 'WITHSCORES')
  if #last == 0 then
    for _, k in ipairs(keys) do
      redis.call('DEL', k)
    end
    return
  end
  local ttl = math.max(1, tonumber(last[2]) - ms)
  for _, k in ipairs(keys) do
    redis.call('PEXPIRE', k, string.format('%d', ttl))
  end
end

-- listWaiter lists token among the shared and semaphore acquirers waiting (s,
-- token -> expiry in server ms; wake.lua) for ttl ms, so that a release
-- wakes it; ttl '0' (a caller that does not wait) lists nothing. unlistWaiter
-- takes it off once it holds a slot. s carries the TTL of its latest
-- entry.
local function listWaiter(s, token, ms, ttl)
  if ttl == '0' then
    return
  end
  redis.call('ZADD', s, string.format('%d', ms + tonumber(ttl)), token)
  expire(s, ms, {s})
end
local function unlistWaiter(s, token, ms, ttl)
  if ttl ~= '0' and redis.call('ZREM', s, token) > 0 then
    expire(s, ms, {s})
  end
end

-- Read a record, its TTL and the server's time in ms in one step.
-- Replies {pttl, HGETALL, now_ms}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {redis.call('PTTL', KEYS[1]), redis.call('HGETALL', KEYS[1]), now}

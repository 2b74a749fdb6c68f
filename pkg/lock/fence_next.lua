-- KEYS[1] fence counter (no TTL). Reply: {1, fence, server ms}, as
-- acquire.lua's, so that the same decoder and WAIT handling apply.
local f = next_fence(KEYS[1])
local now = redis.call('TIME')
return {1, f, tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)}

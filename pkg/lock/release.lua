-- KEYS[1] lock key. ARGV[1] token; ARGV[2] value prefix; ARGV[3] the wake-up
-- channel waiters subscribe to.
-- Replies: {0} no lock; {1} deleted; {2, ...} another holder, as held()
-- describes.
local key = KEYS[1]
-- pcall: see renew.lua.
local v = redis.pcall('GET', key)
if v == false then
  return {0}
end
if type(v) == 'string' then
  if owns(v, ARGV[1], ARGV[2]) then
    redis.call('DEL', key)
    -- Waiters sleep until this message (or their holder's TTL), so the
    -- hand-off costs one round trip instead of a polling interval.
    redis.call('PUBLISH', ARGV[3], 'released')
    return {1}
  end
  return held(2, key, 'string', v)
end
return held(2, key, redis.call('TYPE', key)['ok'])

-- The usual acquire, first in the script (after value_head.lua, before
-- every other prelude, whose functions a Lua chunk would build at each
-- call): neither the lock, nor a
-- semaphore or shared holders of the same name (KEYS[3]), nor exclusive
-- acquirers waiting (KEYS[5]), so nothing can refuse it and nobody is to be
-- taken off a list. It does what acquire.lua's grant() does, with
-- next_fence's usual case inlined: the fence is the server's clock in µs,
-- ahead of the counter, written back with SET ... GET. A counter ahead of
-- the clock (or written by hand) is put back untouched, and the full
-- script below issues the fence as fence.lua says. Keys and arguments as
-- acquire.lua describes.
-- busy (the EXISTS count) is acquire.lua's too: it does not count again.
local busy = redis.call('EXISTS', KEYS[1], KEYS[3], KEYS[5])
if busy == 0 then
  local t = redis.call('TIME')
  local us = t[1] .. string.format('%06d', tonumber(t[2]))
  local c = redis.call('SET', KEYS[2], us, 'GET')
  if c == false or (string.find(c, '^[1-9]%d*$') and (#us > #c or (#us == #c and us > c))) then
    -- us less its last three digits is the time in ms.
    local ms = tonumber(string.sub(us, 1, -4))
    redis.call('SET', KEYS[1], newValue(tokenPrefix(ARGV[1]), us, ARGV[3], ms), 'PX', ARGV[2])
    return {1, us, ms}
  end
  redis.call('SET', KEYS[2], c)
end

-- The usual hand-off, first in the script (after value_head.lua, before
-- every other prelude, whose functions a Lua chunk would build at each
-- call): a plain waiter
-- (ARGV[7] '0'), the token's own value held once, and no semaphore, FIFO
-- queue, shared or semaphore acquirer or exclusive acquirer listed
-- (KEYS[2], KEYS[3], KEYS[6], KEYS[5]), so nobody may take the lock before
-- the waiter: the grant's SET takes the place of the release's DEL, with
-- the fence issued as acquire_fast.lua issues it. A fence counter ahead of
-- the clock is put back untouched, and anything else reads without
-- writing here; both go on to the full script below. Keys, arguments and
-- replies as handoff.lua describes.
if ARGV[7] == '0' then
  local v = redis.pcall('GET', KEYS[1])
  if type(v) == 'string' then
    if owns(v, ARGV[1], tokenPrefix(ARGV[1])) and holds(v) == 1 and
        redis.pcall('EXISTS', KEYS[2], KEYS[3], KEYS[6], KEYS[5]) == 0 then
      local t = redis.call('TIME')
      local us = t[1] .. string.format('%06d', tonumber(t[2]))
      local c = redis.call('SET', KEYS[7], us, 'GET')
      if c == false or (string.find(c, '^[1-9]%d*$') and (#us > #c or (#us == #c and us > c))) then
        local ms = tonumber(string.sub(us, 1, -4))
        redis.call('SET', KEYS[1], newValue(tokenPrefix(ARGV[4]), us, ARGV[6], ms), 'PX', ARGV[5])
        return {1, us, ms}
      end
      redis.call('SET', KEYS[7], c)
    end
  end
end

-- Prelude of every script that issues or compares fences (prepended in Go).
--
-- Fences are decimal integers without leading zeros. They are compared as
-- strings, never as Lua numbers (doubles), so that no value beyond 2^53
-- ever loses a digit.

-- dec_greater reports a > b for such decimals; b may be negative (a counter
-- someone set by hand), a never is.
local function dec_greater(a, b)
  if string.sub(b, 1, 1) == '-' then
    return true
  end
  if #a ~= #b then
    return #a > #b
  end
  return a > b
end

-- next_fence issues a fence from counter k and returns it as a decimal
-- string: the counter plus one or the server's TIME in µs, whichever is
-- greater, stored back into the counter. Its second result is the server's
-- time in ms, read in the same TIME call.
--
-- The floor is what keeps fences ordered when the counter is lost (a
-- restart without persistence, a failover to a replica that had not
-- received the latest increments, an eviction): a counter that starts again
-- from nothing starts at the current time, above every fence issued before,
-- provided that (a) the clock of the server issuing now is ahead of the
-- clock of the server that issued the earlier fences, as it read then
-- (clocks that agree to well within the time a restart or failover takes),
-- and (b) the counter advanced less than one per µs, which holds since every
-- fence takes a script call of its own.
local function next_fence(k)
  local t = redis.call('TIME')
  local us = t[1] .. string.format('%06d', tonumber(t[2]))
  local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  -- The usual case, the clock ahead of the counter, costs one call: SET
  -- with GET writes the clock and returns what the counter held (a key of
  -- another type makes it fail and write nothing, as GET would).
  local c = redis.call('SET', k, us, 'GET')
  if c == false or (string.find(c, '^[1-9]%d*$') and dec_greater(us, c)) then
    return us, ms
  end
  -- A counter ahead of the clock, or one someone wrote by hand: put it
  -- back (the script is atomic, nobody saw the clock in between), then
  -- INCR does the +1 in Redis's own 64-bit arithmetic (a Lua double would
  -- round beyond 2^53) and refuses a value that is not an integer.
  redis.call('SET', k, c)
  redis.call('INCR', k)
  c = redis.call('GET', k)
  if dec_greater(us, c) then
    redis.call('SET', k, us)
    return us, ms
  end
  return c, ms
end

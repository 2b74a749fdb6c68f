-- The usual release, first in the script (after value_head.lua, before
-- every other prelude, whose functions a Lua chunk would build at each
-- call): no waiter listed in the
-- FIFO queue, among the exclusive acquirers or among the shared and
-- semaphore acquirers (KEYS[3], KEYS[5], KEYS[6]), and the token's own
-- value, held once: delete it, publish 'released' as wake.lua does when it
-- finds nobody listed (waiters that are not listed, behind another of
-- their process or under Redlock, wake on it), and write the events
-- (record). Anything else (another holder, a hold count, a key of another
-- type, a refused EXISTS) reads without writing here and goes on to the
-- full script below. Keys, arguments and replies as release.lua
-- describes.

-- record writes to the event stream KEYS[7] (capped at ARGV[4], as XADD
-- MAXLEN ~) the events the caller had queued (ARGV[7] on, as kind, name,
-- milliseconds or '') and, when the release happened (code 1 or 5),
-- 'released' for name ARGV[6] with the hold in ms ARGV[5]: one round trip
-- instead of a write of their own after it. Best effort, as the caller's
-- own write would be: a refused XADD is counted, never an error, and never
-- undoes the release.
local function record(code)
  local stream, maxlen, written = KEYS[7], ARGV[4], 0
  local function xadd(kind, name, ms)
    local r
    if ms == '' then
      r = redis.pcall('XADD', stream, 'MAXLEN', '~', maxlen, '*', 'k', kind, 'n', name)
    else
      r = redis.pcall('XADD', stream, 'MAXLEN', '~', maxlen, '*', 'k', kind, 'n', name, 'ms', ms)
    end
    if type(r) ~= 'table' or not r.err then
      written = written + 1
    end
  end
  for i = 7, #ARGV, 3 do
    xadd(ARGV[i], ARGV[i + 1], ARGV[i + 2])
  end
  if code == 1 or code == 5 then
    xadd('released', ARGV[6], ARGV[5])
  end
  return written
end
-- listed (the EXISTS count, or the refusal) goes on to wake.lua when the
-- release wakes: it does not count again.
local listed = redis.pcall('EXISTS', KEYS[3], KEYS[5], KEYS[6])
if listed == 0 then
  local v = redis.pcall('GET', KEYS[1])
  if type(v) == 'string' then
    if owns(v, ARGV[1], tokenPrefix(ARGV[1])) and holds(v) == 1 then
      redis.call('DEL', KEYS[1])
      local r = {1}
      local pub = redis.pcall('PUBLISH', ARGV[2], 'released')
      if type(pub) == 'table' and pub.err then
        r = {5, pub.err, ARGV[2], false}
      end
      if KEYS[7] == nil then
        return r
      end
      return {record(r[1]), r}
    end
  end
end

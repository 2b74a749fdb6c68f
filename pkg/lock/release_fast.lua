-- The usual release, first in the script (before every prelude, whose
-- functions a Lua chunk would build at each call): no event stream to
-- write (KEYS[7]), no waiter listed in the FIFO queue, among the exclusive
-- acquirers or among the shared and semaphore acquirers (KEYS[3], KEYS[5],
-- KEYS[6]), and the token's own value, held once: delete it, and publish
-- 'released' as wake.lua does when it finds nobody listed (waiters that
-- are not listed, behind another of their process or under Redlock, wake
-- on it). Anything else (another holder, a hold count, a key of another
-- type, a refused EXISTS) reads without writing here and goes on to the
-- full script below. Keys, arguments and replies as release.lua describes.
if KEYS[7] == nil and redis.pcall('EXISTS', KEYS[3], KEYS[5], KEYS[6]) == 0 then
  local v = redis.pcall('GET', KEYS[1])
  if type(v) == 'string' then
    local p = '{"token":"' .. ARGV[1] .. '"'
    if (v == ARGV[1] or string.sub(v, 1, #p) == p) and not string.find(v, ',"holds":', 1, true) then
      redis.call('DEL', KEYS[1])
      local r = redis.pcall('PUBLISH', ARGV[2], 'released')
      if type(r) == 'table' and r.err then
        return {5, r.err, ARGV[2], false}
      end
      return {1}
    end
  end
end

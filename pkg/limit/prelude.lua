-- Shared by every limit script (prepended in Go). Lua numbers are doubles:
-- every value here is an integer below 2^53 (Go checks the bounds), and
-- division goes through math.fmod, which is exact, so no step is lost to
-- rounding.
--
-- Every decision runs this and one algorithm's fast path, so both do as
-- little as they can: numeric strings are converted by arithmetic rather
-- than tonumber, divisions the caller can do are left to it (the reply
-- carries remaining in the algorithm's units and times in its ticks; Go
-- divides), and the helpers of the rare paths are built by lib() only when
-- one is taken.
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2] -- server microseconds
local fmod = math.fmod

-- The configuration (algorithm, rate, burst: Config.String in Go) is the
-- last ARGV but one and is stored with the state, so that a call with
-- another one is refused, {2, stored}, instead of raising or lowering
-- everyone's limit. State written before configurations were stored has
-- none, and takes this call's at its next write. The last ARGV is '1' to
-- forget the state and its configuration first (Limiter.Reset), when it is
-- a limiter's state.
local cfg = ARGV[#ARGV - 1]

local function lib()
  local L = {}

  function L.idiv(a, b) -- floor(a / b) for a >= 0, b > 0
    return (a - fmod(a, b)) / b
  end

  function L.cdiv(a, b) -- ceil(a / b) for a >= 0, b > 0
    local r = fmod(a, b)
    local q = (a - r) / b
    if r > 0 then q = q + 1 end
    return q
  end

  function L.wrongtype()
    return redis.error_reply('WRONGTYPE key holds a value this limit algorithm did not write')
  end

  -- refusal is a redis.pcall's error reply other than WRONGTYPE, or nil.
  -- Only WRONGTYPE says the key holds a value no limit wrote; any other
  -- error (an ACL without the command, OOM) is the server's answer, passed
  -- on as it is, never read as someone else's value.
  function L.refusal(r)
    if type(r) == 'table' and r.err and string.sub(r.err, 1, 10) ~= 'WRONGTYPE ' then
      return r
    end
    return nil
  end

  -- limiterState: the key holds state one of the algorithms wrote, under a
  -- configuration or in the older form without one. Only that is reset: a
  -- value no limit wrote (an application's key under the limit prefix) is
  -- left as it is, and the algorithm then refuses it (WRONGTYPE).
  function L.limiterState(key)
    local t = redis.call('TYPE', key)['ok']
    if t == 'string' then
      local v = redis.call('GET', key)
      local c = string.match(v, ';(.+)$')
      if c then
        v = string.sub(v, 1, #v - #c - 1)
        if not (string.match(c, '^gcra ') or string.match(c, '^sliding%-window ') or string.match(c, '^token%-bucket ')) then
          return false
        end
      end
      return string.match(v, '^%d+:%d+$') ~= nil or string.match(v, '^%d+:%d+:%d+$') ~= nil
    elseif t == 'hash' then -- a token bucket of earlier versions
      for _, f in ipairs(redis.call('HKEYS', key)) do
        if f ~= 'tk' and f ~= 'ts' and f ~= 'cfg' then return false end
      end
      local c = redis.call('HGET', key, 'cfg')
      return not c or string.match(c, '^token%-bucket ') ~= nil
    elseif t == 'zset' then
      -- Members are their own scores; the configuration, scored +inf, last.
      local first = redis.call('ZRANGE', key, 0, 0)[1]
      local c = redis.call('ZRANGEBYSCORE', key, '+inf', '+inf', 'LIMIT', 0, 1)[1]
      if c then return string.match(c, '^sliding%-log ') ~= nil end
      return first == nil or string.match(first, '^%d+$') ~= nil
    end
    return t == 'none'
  end

  -- configOf is the configuration stored at key by any algorithm (a string's
  -- after ';', an earlier token bucket's cfg field, a sorted set's member
  -- scored +inf), or nil.
  function L.configOf(key)
    local t = redis.call('TYPE', key)['ok']
    if t == 'string' then
      return string.match(redis.call('GET', key), ';(.+)$')
    elseif t == 'hash' then
      return redis.call('HGET', key, 'cfg') or nil
    elseif t == 'zset' then
      return redis.call('ZRANGEBYSCORE', key, '+inf', '+inf', 'LIMIT', 0, 1)[1]
    end
    return nil
  end

  -- foreign answers for a state this algorithm cannot read: another
  -- configuration's (another algorithm's), or no limit's at all.
  function L.foreign(key)
    local c = L.configOf(key)
    if c and c ~= cfg then
      return {2, c}
    end
    return L.wrongtype()
  end

  -- failed answers for a redis.pcall's error reply r on key: the server's
  -- refusal as it is, else (WRONGTYPE) as foreign does.
  function L.failed(r, key)
    return L.refusal(r) or L.foreign(key)
  end

  return L
end

if ARGV[#ARGV] == '1' and lib().limiterState(KEYS[1]) then
  redis.call('DEL', KEYS[1])
end

-- First part of value.lua, the Lua side of lockwire's value.go (value.lua
-- describes the layout): the functions the usual acquire, release and
-- hand-off need, which run before every other prelude (acquire_fast.lua,
-- release_fast.lua, handoff_fast.lua in pkg/lock), so that those cases
-- build four functions at each call rather than every prelude's. Every
-- script that uses value.lua starts with this part (lockwire.ValueLua is
-- the two).

-- tokenPrefix is lockwire.ValuePrefix: what every lockctl value holding
-- token starts with.
local function tokenPrefix(token)
  return '{"token":"' .. token .. '"'
end

-- owns mirrors lockwire.Owns: a lockctl value whose prefix carries the
-- token, or a foreign plain string lock whose whole value is the token.
local function owns(v, token, prefix)
  return v == token or string.sub(v, 1, #prefix) == prefix
end

-- newValue builds the value an acquire stores: prefix is tokenPrefix(token),
-- fence a decimal string (see fence.lua), rest the members Go sent, ms the
-- server's time in ms, which is also the lease's first renewal.
local function newValue(prefix, fence, rest, ms)
  local t = string.format('%d', ms)
  return prefix .. ',"fence":' .. fence .. rest .. ',"acquired_ms":' .. t .. ',"renewed_ms":' .. t .. '}'
end

-- holds is the hold count of a lockctl value: how many times its token
-- re-entered the lease, plus one. Absent means 1.
local function holds(v)
  -- A plain search first: most values hold once, and a pattern tries
  -- every position of the value.
  if not string.find(v, ',"holds":', 1, true) then
    return 1
  end
  local n = string.match(v, ',"holds":(%d+)')
  if n then
    return tonumber(n)
  end
  return 1
end

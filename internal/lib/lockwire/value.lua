-- Prelude of every script that writes, reads or edits a stored lock value
-- (prepended in Go, before the other preludes, after value_head.lua, its
-- first part): the Lua side of lockwire's value.go, and with
-- value_head.lua the only Lua that knows the value's layout.
--
-- A value is one JSON object whose first member is the token and whose
-- second is the fence:
--   {"token":"<token>","fence":<n>,"owner":...[,"pid_start":<n>][,"note":...]
--    [,"ci":...][,"limit":<n>][,"mode":"shared"],"ttl_ms":<n>[,"renew_every_ms":<n>],
--    "acquired_ms":<n>,"renewed_ms":<n>[,"holds":<n>]}
-- Go writes the members between the fence and acquired_ms
-- (lockwire.Members); newValue (value_head.lua) adds the rest, and every
-- renewal moves renewed_ms (withRenewed). A token holds no '"', and a '"'
-- inside owner, note or ci is always escaped, so no member name can match
-- inside another member's string.

-- withRenewed returns v with its last renewal at ms (the server's time in
-- ms), which is how inspect tells a holder that stopped renewing (killed)
-- from one that renews. A value without acquired_ms (a foreign lock) is
-- returned as it is.
local function withRenewed(v, ms)
  local m = ',"renewed_ms":' .. string.format('%d', ms)
  local nv, n = string.gsub(v, ',"renewed_ms":%d+', m, 1)
  if n > 0 then
    return nv
  end
  local _, j = string.find(v, ',"acquired_ms":%d+')
  if not j then
    return v
  end
  return string.sub(v, 1, j) .. m .. string.sub(v, j + 1)
end

-- ownerSpan is where the owner member (,"owner":...) of a value, or of the
-- members Go sent, starts and ends, or nil; the start time of the owner's
-- process (,"pid_start":<n>), which Go writes right after it, goes with
-- it. A '"' inside a JSON string is always escaped, so ',"' never occurs
-- inside one: the member ends where the next one starts (there is always
-- one: ttl_ms, acquired_ms).
local function ownerSpan(s)
  local i, j = string.find(s, ',"owner":', 1, true)
  if not i then
    return nil
  end
  local k = string.find(s, ',"', j + 1, true)
  if not k then
    return nil
  end
  local _, e = string.find(s, '^,"pid_start":%d+', k)
  if e then
    return i, e
  end
  return i, k - 1
end

-- withMembers returns v with rest (the members Go sent, as newValue takes
-- them) in place of its own between the fence and acquired_ms: an acquire
-- by the token that already holds the lock stores its caller's note, ci,
-- ttl and renewal period, and its owner unless keepOwner (the caller named
-- none: rest has the default), and keeps the token, the fence, the
-- acquisition time and the hold count. Any other value (a foreign lock) is
-- returned as it is. The caller marks the renewal (withRenewed).
local function withMembers(v, rest, keepOwner)
  local head = string.match(v, '^{"token":"[^"]+","fence":%d+')
  local at = string.find(v, ',"acquired_ms":%d+')
  if not head or not at then
    return v
  end
  if keepOwner then
    local a, b = ownerSpan(v)
    local c, d = ownerSpan(rest)
    if a and c then
      rest = string.sub(rest, 1, c - 1) .. string.sub(v, a, b) .. string.sub(rest, d + 1)
    end
  end
  return head .. rest .. string.sub(v, at)
end

-- valueToken is the token of a lockctl value, or nil for any other string.
local function valueToken(v)
  return string.match(v, '^{"token":"([^"]+)"')
end

-- valueFence is the fence of a lockctl value as a decimal string, or nil.
-- The token is the first member and holds no '"', so the first match is
-- the fence.
local function valueFence(v)
  return string.match(v, '"fence":(%d+)')
end

-- valueOwner is the owner of a lockctl value, or nil when the value is no
-- JSON object with a string owner.
local function valueOwner(v)
  local ok, d = pcall(cjson.decode, v)
  if ok and type(d) == 'table' and type(d.owner) == 'string' then
    return d.owner
  end
  return nil
end

-- withFence returns v with fence f (a decimal string).
local function withFence(v, f)
  return (string.gsub(v, '"fence":%d+', '"fence":' .. f, 1))
end

-- withHolds returns v with hold count n (the member dropped at 1).
local function withHolds(v, n)
  local m = ''
  if n > 1 then
    m = ',"holds":' .. string.format('%d', n)
  end
  if string.find(v, ',"holds":%d+') then
    return (string.gsub(v, ',"holds":%d+', m, 1))
  end
  return string.sub(v, 1, -2) .. m .. '}'
end

-- isShared reports a shared holder's value ("mode":"shared").
local function isShared(v)
  return string.find(v, ',"mode":"shared"', 1, true) ~= nil
end

-- valueLimit is the "limit" a semaphore holder's value records, as a
-- decimal string, or nil.
local function valueLimit(v)
  return string.match(v, ',"limit":(%d+)')
end

-- leaseTTL is the TTL in ms a lease was taken with, from its value's
-- "ttl_ms" member, for renewals that ask for "the lease's own TTL" (ttl 0);
-- nil when the value does not record one (a foreign lock).
local function leaseTTL(v)
  return string.match(v or '', ',"ttl_ms":(%d+)')
end

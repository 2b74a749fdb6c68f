-- Sliding window: one string "W:CUR:PREV;CONFIG", the counts of fixed
-- window W and of the one before it, and the configuration they were
-- written under (see the prelude; absent in older state). The estimate weights PREV by the part of the
-- previous window still inside the sliding one; it is kept multiplied by
-- the window length so that it stays an integer.
-- KEYS[1] key; ARGV: window (in units), unit (us per unit), limit, cost.
-- Reply: {allowed, remaining*window, retry after, reset after}, times in
-- microseconds; when admitted, one integer instead: the units until the
-- reset times limit+1, plus the calls remaining (exact: limit*window is
-- below 2^51, which New checks, so the whole stays below 2^53).
local key = KEYS[1]
local window = ARGV[1] + 0
local unit = ARGV[2] + 0
local limit = ARGV[3] + 0
local cost = ARGV[4] + 0

local nowu = now
if unit ~= 1 then nowu = (now - fmod(now, unit)) / unit end
local e = fmod(nowu, window) -- elapsed in window w
local w = (nowu - e) / window
local cur, prev = 0, 0
local v = redis.pcall('GET', key)
if v then
  if type(v) == 'table' then return lib().failed(v, key) end
  local sw, sc, sp, c = string.match(v, '^(%d+):(%d+):(%d+);(.+)$')
  if not sw then
    sw, sc, sp = string.match(v, '^(%d+):(%d+):(%d+)$')
    if not sw then return lib().foreign(key) end
  elseif c ~= cfg then
    return {2, c}
  end
  sw = sw + 0
  if sw == w then
    cur, prev = sc + 0, sp + 0
  elseif sw == w - 1 then
    prev = sc + 0
  elseif sw > w then
    -- The server clock stepped back: stay in the stored window, at its
    -- start, where the estimate is highest.
    w, e, cur, prev = sw, 0, sc + 0, sp + 0
  end
end

local used = prev * (window - e) + cur * window
local capacity = limit * window
if used + cost * window > capacity then
  local L = lib()
  local retry
  if cur + cost <= limit then
    -- Later in this window, as PREV's weight shrinks.
    retry = window - L.idiv((limit - cur - cost) * window, prev) - e
  else
    -- In the next window, where CUR becomes the previous count.
    retry = window - e + window - L.idiv((limit - cost) * window, cur)
  end
  local reset = 0
  if cur > 0 then reset = 2 * window - e elseif prev > 0 then reset = window - e end
  return {0, math.max(0, capacity - used), retry * unit, reset * unit}
end

cur = cur + cost
used = used + cost * window
-- CUR still counts as PREV through the next window.
local reset = (2 * window - e) * unit
local px = fmod(reset, 1000)
if px > 0 then px = (reset - px) / 1000 + 1 else px = reset / 1000 end
redis.call('SET', key, string.format('%d:%d:%d;%s', w, cur, prev, cfg), 'PX', px)
local left = capacity - used
return (2 * window - e) * (limit + 1) + (left - fmod(left, window)) / window

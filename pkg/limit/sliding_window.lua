-- Sliding window: one string "W:CUR:PREV;CONFIG", the counts of fixed
-- window W and of the one before it, and the configuration they were
-- written under (see the prelude; absent in older state). The estimate weights PREV by the part of the
-- previous window still inside the sliding one; it is kept multiplied by
-- the window length so that it stays an integer.
-- KEYS[1] key; ARGV: window (in units), unit (us per unit), limit, cost.
local key = KEYS[1]
local window = tonumber(ARGV[1])
local unit = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])

local nowu = idiv(now, unit)
local w = idiv(nowu, window)
local e = nowu - w * window -- elapsed in window w
local cur, prev = 0, 0
local v = redis.pcall('GET', key)
if refusal(v) then return v end
if type(v) == 'table' then return foreign(key) end -- WRONGTYPE
if v then
  local sw, sc, sp, c = string.match(v, '^(%d+):(%d+):(%d+);(.+)$')
  if not sw then sw, sc, sp = string.match(v, '^(%d+):(%d+):(%d+)$') end
  if not sw then return foreign(key) end
  if c and c ~= cfg then return {2, c} end
  sw, sc, sp = tonumber(sw), tonumber(sc), tonumber(sp)
  if sw == w then
    cur, prev = sc, sp
  elseif sw == w - 1 then
    prev = sc
  elseif sw > w then
    -- The server clock stepped back: stay in the stored window, at its
    -- start, where the estimate is highest.
    w, e, cur, prev = sw, 0, sc, sp
  end
end

local used = prev * (window - e) + cur * window
local capacity = limit * window
if used + cost * window > capacity then
  local retry
  if cur + cost <= limit then
    -- Later in this window, as PREV's weight shrinks.
    retry = window - idiv((limit - cur - cost) * window, prev) - e
  else
    -- In the next window, where CUR becomes the previous count.
    retry = window - e + window - idiv((limit - cost) * window, cur)
  end
  local reset = 0
  if cur > 0 then reset = 2 * window - e elseif prev > 0 then reset = window - e end
  return {0, limit, math.max(0, idiv(math.max(0, capacity - used), window)), retry * unit, reset * unit}
end

cur = cur + cost
used = used + cost * window
-- CUR still counts as PREV through the next window.
local reset = 2 * window - e
redis.call('SET', key, string.format('%d:%d:%d;%s', w, cur, prev, cfg), 'PX', cdiv(reset * unit, 1000))
return {1, limit, idiv(capacity - used, window), 0, reset * unit}

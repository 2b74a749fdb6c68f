-- Releases a set of locks in one step: every key the token still holds is
-- deleted (a re-entered one gives back one hold, as release.lua does) and
-- its waiters woken, whether or not the others are still the token's.
--
-- KEYS, five per name i from 5(i-1)+1: the lock key, its FIFO queue and
-- heartbeats, its exclusive acquirers waiting, its shared and semaphore
-- waiters (wake.lua). ARGV[1] token;
-- per name i, ARGV[2i] its release channel and ARGV[2i+1] the base of its
-- waiters' own channels.
-- Replies: {1} every key released; {4, holds left} released, but a key the
-- token had re-entered keeps that many holds (the most of any key); {0, i}
-- key i was gone (the set was lost), the others released; {2, i, type, ...}
-- another holder has key i, as held() describes, the others released;
-- {5, error, channel, command} released, but the server refused a wake-up
-- (wake.lua).
local token, n = ARGV[1], #KEYS / 5
local prefix = tokenPrefix(token)
local lost, left, refusal
for i = 1, n do
  local b = 5 * (i - 1)
  local key = KEYS[b + 1]
  -- pcall: see renew.lua.
  local v = redis.pcall('GET', key)
  if v == false then
    lost = lost or {0, i}
  elseif type(v) ~= 'string' then
    if not lost then
      lost = held(2, key, redis.call('TYPE', key)['ok'])
      table.insert(lost, 2, i)
    end
  elseif not owns(v, token, prefix) then
    if not lost then
      lost = held(2, key, 'string', v)
      table.insert(lost, 2, i)
    end
  else
    local h = holds(v)
    if h > 1 then
      redis.call('SET', key, withHolds(v, h - 1), 'KEEPTTL')
      left = math.max(left or 0, h - 1)
    else
      redis.call('DEL', key)
      local err, ch, command = wake(ARGV[2 * i], ARGV[2 * i + 1], KEYS[b + 2], KEYS[b + 3], KEYS[b + 4], KEYS[b + 5], false)
      if err and not refusal then
        refusal = {5, err, ch, command or false}
      end
    end
  end
end
if lost then
  return lost
end
if refusal then
  return refusal
end
if left then
  return {4, left}
end
return {1}

-- Redlock fence write-back. KEYS[1] fence counter; KEYS[2] (optional) lock
-- key. ARGV[1] the fence F, a decimal integer >= 1 without leading zeros;
-- ARGV[2] and ARGV[3] (with KEYS[2]) the value prefix {"token":"<token>"
-- and the token.
--
-- Raises the counter to at least F (raising a counter never harms its
-- monotonicity, so it needs no condition). With a lock key, it then rewrites
-- the fence of the stored value to F, keeping its TTL, but only while the
-- value still carries the token.
-- Replies: 1 done (the lock carries the token and now fence F); 0 the lock
-- no longer carries the token.
local c = redis.call('GET', KEYS[1]) or '0'
if dec_greater(ARGV[1], c) then
  redis.call('SET', KEYS[1], ARGV[1])
end
if #KEYS < 2 then
  return 1
end
local v = redis.pcall('GET', KEYS[2])
if type(v) ~= 'string' then
  return 0
end
if v == ARGV[3] then
  -- A foreign plain lock whose whole value is the token: no fence to store.
  return 1
end
if string.sub(v, 1, #ARGV[2]) ~= ARGV[2] then
  return 0
end
local nv = withFence(v, ARGV[1])
if nv ~= v then
  redis.call('SET', KEYS[2], nv, 'KEEPTTL')
end
return 1

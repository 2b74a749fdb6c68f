-- KEYS[1] lock key. Replies: {0} free; {2, ...} as held() describes.
local t = redis.call('TYPE', KEYS[1])['ok']
if t == 'none' then
  return {0}
end
return held(2, KEYS[1], t)

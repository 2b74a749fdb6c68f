-- KEYS[1] lock key; KEYS[2], KEYS[3] the semaphore of the same name.
-- Replies: {0} free; {2, ...} as held() describes, or as semHeld() does
-- (with code 2) when only semaphore slots hold the name.
local t = redis.call('TYPE', KEYS[1])['ok']
if t == 'none' then
  local sem = semHeld(KEYS[2], KEYS[3])
  if sem then
    sem[1] = 2
    return sem
  end
  return {0}
end
return held(2, KEYS[1], t)

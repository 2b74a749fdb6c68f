-- KEYS[1] a key found without TTL. ARGV[1] "expire" or "delete"; ARGV[2]
-- the TTL in ms for expire; ARGV[3] the lock's release channel.
-- Acts only if the key still has no TTL: between the scan and the fix its
-- holder may have set one, or the key may be a new lock taken since.
-- Replies 1 when it acted, 0 when the key changed meanwhile.
if redis.call('PTTL', KEYS[1]) ~= -1 then
  return 0
end
if ARGV[1] == 'delete' then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[3], 'released')
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1

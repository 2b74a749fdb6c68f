-- KEYS[1] a key found without TTL. ARGV[1] "expire" or "delete"; ARGV[2]
-- the TTL in ms for expire; ARGV[3] the lock's release channel; ARGV[4]
-- Redisson's channel for the key; ARGV[5] Redisson's unlock message;
-- ARGV[6] the type the key was listed with, or ''.
-- Acts only if the key still has no TTL: between the scan and the fix its
-- holder may have set one, or the key may be a new lock taken since.
-- Replies 1 when it acted, 0 when the key changed meanwhile, {1, error,
-- channel} when it acted but the server refused a wake-up (an ACL without
-- PUBLISH or the channel): the fix stands, and is reported as done.
if redis.call('PTTL', KEYS[1]) ~= -1 then
  return 0
end
local t = redis.call('TYPE', KEYS[1])['ok']
-- ARGV[6], when given, is the type the key had when it was listed (and
-- confirmed): a key replaced since by another kind of value is left alone.
if ARGV[6] and ARGV[6] ~= '' and t ~= ARGV[6] then
  return 0
end
local hash = t == 'hash'
if ARGV[1] == 'delete' then
  redis.call('DEL', KEYS[1])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
-- Waiters that saw no TTL wait for a message (Redisson's forever): after a
-- delete they take the lock, after an expire they learn when it frees.
-- Best effort (pcall): a script stops at a refused call, after its writes,
-- and a fix that was made must not be reported as failed.
local refused
local function wake(channel, msg)
  local r = redis.pcall('PUBLISH', channel, msg)
  if type(r) == 'table' and r.err and not refused then
    refused = {1, r.err, channel}
  end
end
wake(ARGV[3], 'released')
if hash then
  -- A Redisson lock: its channel and message, as its own unlock publishes
  -- them; SPUBLISH for Redisson's sharded subscriptions on a Redis 7
  -- Cluster (pcall: older servers lack it).
  wake(ARGV[4], ARGV[5])
  redis.pcall('SPUBLISH', ARGV[4], ARGV[5])
end
return refused or 1

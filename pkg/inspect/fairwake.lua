-- KEYS[1], KEYS[2] a Redisson fair lock's queue and timeouts; ARGV[1]
-- Redisson's channel for the lock; ARGV[2] its unlock message. Run after a
-- force-release freed a Redisson lock: a separate script, so that a user
-- whose ACL has no Redisson keys still force-releases, and only this
-- wake-up is refused (best effort, as every wake-up is).
--
-- Redisson's fair lock (RFairLock) keeps its waiters in a list (KEYS[1],
-- their thread names in arrival order) and the time each gives up its place
-- in a sorted set (KEYS[2], Redisson's client ms), and wakes only the head,
-- with its unlock message on a channel of the head's own: Redisson's
-- channel, ':', the head's name. Do as its forceUnlock does: drop the heads
-- whose place timed out, wake the one that is left. Otherwise the head
-- sleeps until its own timer, up to the lease. Keys of another type are
-- someone else's: left alone, nobody woken. Replies: the head woken, or
-- false.
local queue, timeouts = KEYS[1], KEYS[2]
local tt = redis.call('TYPE', timeouts)['ok']
if redis.call('TYPE', queue)['ok'] ~= 'list' or (tt ~= 'zset' and tt ~= 'none') then
  return false
end
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
while true do
  local head = redis.call('LINDEX', queue, 0)
  if not head then
    return false
  end
  local timeout = tonumber(redis.call('ZSCORE', timeouts, head))
  if not timeout or timeout > now then
    local ch = ARGV[1] .. ':' .. head
    redis.call('PUBLISH', ch, ARGV[2])
    redis.pcall('SPUBLISH', ch, ARGV[2])
    return head
  end
  redis.call('ZREM', timeouts, head)
  redis.call('LPOP', queue)
end

-- Renews whoever holds the key: it can extend someone else's lock.
return redis.call('PEXPIRE', KEYS[1], ARGV[2])

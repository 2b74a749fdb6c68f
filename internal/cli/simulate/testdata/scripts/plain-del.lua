-- The release most people write first: delete the key, whoever holds it.
return redis.call('DEL', KEYS[1])

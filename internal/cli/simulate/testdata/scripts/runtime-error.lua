-- Calls a command Redis does not have: redis.call raises an error.
return redis.call('COMPAREDEL', KEYS[1], ARGV[1])

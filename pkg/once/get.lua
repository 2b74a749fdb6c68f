-- Read a record and its TTL in one step. Replies {pttl, HGETALL}.
return {redis.call('PTTL', KEYS[1]), redis.call('HGETALL', KEYS[1])}

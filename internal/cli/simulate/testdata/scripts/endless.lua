-- Waits for the key to be its caller's: it never returns when it is not.
while redis.call('GET', KEYS[1]) ~= ARGV[1] do
end
return redis.call('DEL', KEYS[1])

-- KEYS: the index's sorted set and counter; ARGV: session id
redis.call('ZADD', KEYS[1], redis.call('INCR', KEYS[2]), ARGV[1])

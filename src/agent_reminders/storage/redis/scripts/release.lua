-- ARGV: owner -> 1 released | 0 not the holder | -1 unknown session (compare-and-delete)
if redis.call('EXISTS', S) == 0 then return -1 end
if redis.call('GET', LEASE) ~= ARGV[1] then return 0 end
redis.call('DEL', LEASE)
return 1

-- ARGV: owner, milliseconds -> 1 renewed | 0 not the holder | -1 unknown session
if redis.call('EXISTS', S) == 0 then return -1 end
if redis.call('GET', LEASE) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', LEASE, ARGV[2])
return 1

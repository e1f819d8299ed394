-- ARGV: id, now -> 'revoked', or the id's status when it is no longer pending
if redis.call('EXISTS', S) == 0 then return 'unknown' end
local status = redis.call('HGET', IDS, ARGV[1])
if status ~= 'pending' then return status or 'none' end
settle(ARGV[1], 'revoked')
redis.call('HSET', S, 'updated_at', ARGV[2])
return 'revoked'

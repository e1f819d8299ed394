-- ARGV: id, mode, item, limit (0: none), now, channel
if redis.call('EXISTS', S) == 0 then return 'unknown' end
if redis.call('HEXISTS', IDS, ARGV[1]) == 1 then return 'duplicate' end
local limit = tonumber(ARGV[4])
if limit > 0 and redis.call('LLEN', QUEUE) >= limit then return 'full' end
push_item(ARGV[1], ARGV[2], ARGV[3])
redis.call('HSET', S, 'updated_at', ARGV[5])
redis.call('PUBLISH', ARGV[6], ARGV[2])
return 'ok'

-- ARGV: head read, new head, now
if redis.call('EXISTS', S) == 0 then return 'unknown' end
if redis.call('HGET', S, 'head') ~= ARGV[1] then return 'conflict' end
redis.call('HSET', S, 'head', ARGV[2], 'updated_at', ARGV[3])
redis.call('HINCRBY', S, 'revision', 1)
return 'ok'

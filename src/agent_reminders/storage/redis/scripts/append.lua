-- ARGV: digest read, new digest, now, messages...
if redis.call('EXISTS', S) == 0 then return 'unknown' end
if redis.call('HGET', S, 'digest') ~= ARGV[1] then return 'conflict' end
push_texts(MESSAGES, 4, #ARGV - 3)
redis.call('HSET', S, 'message_count', redis.call('LLEN', MESSAGES), 'digest', ARGV[2],
  'updated_at', ARGV[3])
redis.call('HINCRBY', S, 'revision', 1)
return 'ok'

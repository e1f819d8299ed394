-- ARGV: head, turn, digest, now, n, n messages, na, na audit entries, rows count, rows
if redis.call('EXISTS', S) == 1 then return 'exists' end
redis.call('DEL', MESSAGES, QUEUE, ITEMS, MODES, IDS, EVENTS, AUDIT)
local n = tonumber(ARGV[5])
push_texts(MESSAGES, 6, n)
local na = tonumber(ARGV[6 + n])
push_texts(AUDIT, 7 + n, na)
apply_rows(8 + n + na, tonumber(ARGV[7 + n + na]))
redis.call('HSET', S, 'head', ARGV[1], 'turn', ARGV[2], 'message_count', n, 'digest', ARGV[3],
  'created_at', ARGV[4], 'updated_at', ARGV[4], 'event_seq', 0, 'revision', 0)
return 'ok'

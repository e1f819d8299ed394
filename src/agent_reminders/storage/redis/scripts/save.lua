-- ARGV: revision read, append messages (1) or replace them (0), the same for the audit
-- entries, head, turn, count, digest, now, n, n messages, na, na audit entries, rows count,
-- rows -> {'ok', new revision} | {'conflict'} | {'unknown'}
if redis.call('EXISTS', S) == 0 then return {'unknown'} end
if (redis.call('HGET', S, 'revision') or '0') ~= ARGV[1] then return {'conflict'} end
local n = tonumber(ARGV[9])
local na = tonumber(ARGV[10 + n])
local at = 12 + n + na
local rows = tonumber(ARGV[11 + n + na])
if not rows_unchanged(at, rows) then return {'conflict'} end
if ARGV[2] == '0' then redis.call('DEL', MESSAGES) end
push_texts(MESSAGES, 10, n)
if ARGV[3] == '0' then redis.call('DEL', AUDIT) end
push_texts(AUDIT, 11 + n, na)
apply_rows(at, rows)
redis.call('HSET', S, 'head', ARGV[4], 'turn', ARGV[5], 'message_count', ARGV[6],
  'digest', ARGV[7], 'updated_at', ARGV[8])
return {'ok', redis.call('HINCRBY', S, 'revision', 1)}

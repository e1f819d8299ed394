-- ARGV: now, then (topic, kind, payload) per record -> the seq before the first, or -1
if redis.call('EXISTS', S) == 0 then return -1 end
local start = tonumber(redis.call('HGET', S, 'event_seq') or '0')
local seq = start
for i = 2, #ARGV, 3 do
  seq = seq + 1
  redis.call('XADD', EVENTS, seq .. '-0', 'topic', ARGV[i], 'kind', ARGV[i + 1],
    'payload', ARGV[i + 2])
end
if seq > start then redis.call('HSET', S, 'event_seq', seq, 'updated_at', ARGV[1]) end
return start

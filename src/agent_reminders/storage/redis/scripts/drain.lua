-- ARGV: now, modes... -> {'ok', id, item, id, item, ...} in FIFO order
if redis.call('EXISTS', S) == 0 then return {'unknown'} end
local wanted = {}
for i = 2, #ARGV do wanted[ARGV[i]] = true end
local taken, kept = {'ok'}, {}
for _, id in ipairs(redis.call('LRANGE', QUEUE, 0, -1)) do
  if wanted[redis.call('HGET', MODES, id)] then
    table.insert(taken, id)
    table.insert(taken, redis.call('HGET', ITEMS, id))
    redis.call('HSET', IDS, id, 'delivered')
    redis.call('HDEL', ITEMS, id)
    redis.call('HDEL', MODES, id)
  else
    table.insert(kept, id)
  end
end
if #taken > 1 then
  redis.call('DEL', QUEUE)
  for _, id in ipairs(kept) do redis.call('RPUSH', QUEUE, id) end
  redis.call('HSET', S, 'updated_at', ARGV[1])
end
return taken

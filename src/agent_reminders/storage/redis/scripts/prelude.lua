-- Every session script starts with this: the keys of the session, in the order of
-- RedisConnection.session_keys, and the helpers the scripts share.
local S, MESSAGES, QUEUE, ITEMS, MODES, IDS, EVENTS, LEASE, AUDIT =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local function push_item(id, mode, item)
  redis.call('HSET', IDS, id, 'pending')
  redis.call('RPUSH', QUEUE, id)
  redis.call('HSET', ITEMS, id, item)
  redis.call('HSET', MODES, id, mode)
end
local function settle(id, status)
  redis.call('HSET', IDS, id, status)
  redis.call('LREM', QUEUE, 1, id)
  redis.call('HDEL', ITEMS, id)
  redis.call('HDEL', MODES, id)
end
local function push_texts(key, at, n)
  for i = at, at + n - 1 do redis.call('RPUSH', key, ARGV[i]) end
end
-- queue rows: n groups of (id, status expected now or 'none', new status, mode, item)
local function rows_unchanged(at, n)
  for i = at, at + 5 * (n - 1), 5 do
    if (redis.call('HGET', IDS, ARGV[i]) or 'none') ~= ARGV[i + 1] then return false end
  end
  return true
end
local function apply_rows(at, n)
  for i = at, at + 5 * (n - 1), 5 do
    local id, status = ARGV[i], ARGV[i + 2]
    if ARGV[i + 1] == 'pending' then
      settle(id, status)
    elseif status == 'pending' then
      push_item(id, ARGV[i + 3], ARGV[i + 4])
    else
      redis.call('HSET', IDS, id, status)
    end
  end
end

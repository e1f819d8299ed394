-- ARGV: owner, milliseconds, the owner it may replace ('' for none) -> {'ok'} |
-- {'held', owner} | {'unknown'}; a live lease is taken over only from that very owner
if redis.call('EXISTS', S) == 0 then return {'unknown'} end
if redis.call('SET', LEASE, ARGV[1], 'NX', 'PX', ARGV[2]) then return {'ok'} end
local held = redis.call('GET', LEASE)
if ARGV[3] ~= '' and held == ARGV[3] then
  redis.call('SET', LEASE, ARGV[1], 'PX', ARGV[2])
  return {'ok'}
end
return {'held', held}

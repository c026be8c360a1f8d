--[[
  Takes a permit of a semaphore whose permits each have a lease (redis-semaphore's design, with
  fencing): a holder that dies loses its permit when its lease ends.

  KEYS[1]  permits: zset {owner (permit id): lease end, ms on Redis's clock}
  KEYS[2]  fencing counter: integer, the last token issued for this name (never expires)
  ARGV[1]  owner id (one permit per owner)
  ARGV[2]  lease in milliseconds
  ARGV[3]  permits: how many holders at once

  Returns  the fencing token when a permit was taken;
           {retry ms} when all are taken: when the first permit's lease ends (-1 if the owner already
           holds a permit: it never gets a second one).
]]
-- @include outlive.lua
local t = redis.call('time')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local owner, lease = ARGV[1], tonumber(ARGV[2])
redis.call('zremrangebyscore', KEYS[1], '-inf', now)
if redis.call('zcard', KEYS[1]) < tonumber(ARGV[3]) then
  -- NX: an owner that holds a permit already is not given a second one (nor a new lease).
  if redis.call('zadd', KEYS[1], 'NX', now + lease, owner) == 0 then
    return { -1 }
  end
  outlive(KEYS[1], lease)
  return redis.call('incr', KEYS[2])
end
if redis.call('zscore', KEYS[1], owner) then
  return { -1 }
end
local first = redis.call('zrange', KEYS[1], 0, 0, 'WITHSCORES')[2]
return { math.max(tonumber(first) - now, 0) }

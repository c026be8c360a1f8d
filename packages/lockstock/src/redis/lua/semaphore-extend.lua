--[[
  Resets the lease of a permit (extend() and the watchdog).

  KEYS[1]  permits: zset {owner: lease end, ms on Redis's clock}
  KEYS[2]  the owner's holder record (see semaphore-acquire.lua): its TTL follows the lease; KEYS[1]
           again when the client keeps none
  ARGV[1]  owner id
  ARGV[2]  new lease in milliseconds

  Returns  1 extended; -1 the owner has no permit (its lease ended and it was dropped).
]]
-- @include outlive.lua
local t = redis.call('time')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local lease = tonumber(ARGV[2])
local ends = redis.call('zscore', KEYS[1], ARGV[1])
if not ends or tonumber(ends) <= now then
  return -1
end
redis.call('zadd', KEYS[1], now + lease, ARGV[1])
outlive(KEYS[1], lease)
if KEYS[2] ~= KEYS[1] then
  redis.call('pexpire', KEYS[2], lease)
end
return 1

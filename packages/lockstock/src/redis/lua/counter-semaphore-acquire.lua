--[[
  Takes a permit of a counter semaphore (Redisson's RSemaphore): permits in use are one integer, with
  no owner and no lease — a holder that dies without releasing keeps its permit for good.

  KEYS[1]  permits in use: integer
  KEYS[2]  fencing counter
  KEYS[3]  permit count: integer, stored by the first acquire (or setPermits), never expires
  ARGV[1]  permits: how many holders at once, as this client was configured

  Returns  the fencing token when a permit was taken; {-1} when all are in use (wait for a release);
           an error reply 'LOCKSTOCK_PERMITS <stored>' when the count stored on Redis is another one.
]]
local permits_key, configured_permits = KEYS[3], ARGV[1]
-- @include permits-check.lua
if tonumber(redis.call('get', KEYS[1]) or '0') < tonumber(ARGV[1]) then
  redis.call('incr', KEYS[1])
  return redis.call('incr', KEYS[2])
end
return { -1 }

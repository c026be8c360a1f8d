--[[
  A buyer with a valid ticket asks where they stand: admits whoever the pace allows first.

  KEYS[1..6]  config, state, queue, admitted, spent, active (see join.lua)
  KEYS[7]     the sale's orders stream (see join.lua)
  ARGV[1]     buyer id
  ARGV[2]     the score the buyer's ticket carries: puts them back in their place if the queue lost
              them (Redis lost its data), never ahead of it

  Returns  {-1} no room; {1, admitted at, now} admitted; {2, admitted at, now} admitted, but the
           admission has lapsed (join again); {3, admitted at, now} admitted, and the admission has
           bought its order (join again to buy more); {0, position, now, rate} waiting.
]]
-- @include advance.lua
local config = roomConfig(KEYS[1])
if not config then return {-1} end
local now = redisNowMs()
local user = ARGV[1]
advance(config, KEYS[2], KEYS[3], KEYS[4], KEYS[6], KEYS[7], now)
local admittedAt = tonumber(redis.call('hget', KEYS[4], user) or '0')
if admittedAt > 0 then
  if tonumber(redis.call('hget', KEYS[5], user) or '0') == admittedAt then return {3, admittedAt, now} end
  if admittedAt + tonumber(config.admitMs) > now then return {1, admittedAt, now} end
  return {2, admittedAt, now}
end
local rank = redis.call('zrank', KEYS[3], user)
if not rank then
  redis.call('zadd', KEYS[3], 'NX', ARGV[2], user)
  rank = redis.call('zrank', KEYS[3], user)
end
return {0, rank + 1, now, config.rate}

--[[
  A buyer joins a sale's waiting room (or asks again: one place per buyer). Spends the buyer's
  proof-of-work challenge in the same step, so a challenge buys at most one place.

  KEYS[1]  config: hash of the room's settings {rate, openAt, shuffleMs,
           admitMs (from admission to its end, notice included), noticeMs, powBits, ticketMs,
           maxActive, paused}
  KEYS[2]  state: hash {credit, last, admitted, joined, firstJoin}
  KEYS[3]  queue: sorted set {buyer: score}; the lowest scores are admitted first
  KEYS[4]  admitted: hash {buyer: admitted at, ms on the Redis clock}
  KEYS[5]  spent: hash {buyer: admitted at of the admission they bought with}
  KEYS[6]  active: sorted set {buyer: when their admission ends}
  KEYS[7]  the challenge's spent marker (any key on the tag when ARGV[3] is '')
  KEYS[8]  the sale's orders stream (the pipeline's backlog paces the room: advance.lua)
  ARGV[1]  buyer id
  ARGV[2]  a random fraction in [0, 1) (the caller's CSPRNG): the buyer's order within its window
  ARGV[3]  '' without a challenge; else the challenge's expiry (ms since the epoch): the marker lives
           until then

  The score is window + fraction, where window = floor((now − openAt) / shuffleMs), 0 before the sale
  starts: buyers of one window are in random order, windows in arrival order. A buyer whose admission
  lapsed or was spent on an order joins again as a newcomer.

  Returns  {-1} no room; {-2} the challenge was spent already;
           {1, admitted at, now} admitted (and neither expired nor spent);
           {0, position (1: next), score, now, rate} waiting.
]]
-- @include advance.lua
local config = roomConfig(KEYS[1])
if not config then return {-1} end
if ARGV[3] ~= '' then
  if not redis.call('set', KEYS[7], '1', 'NX', 'PXAT', ARGV[3]) then return {-2} end
end
local now = redisNowMs()
local user = ARGV[1]
advance(config, KEYS[2], KEYS[3], KEYS[4], KEYS[6], KEYS[8], now)
local admittedAt = tonumber(redis.call('hget', KEYS[4], user) or '0')
if admittedAt > 0 then
  local spent = tonumber(redis.call('hget', KEYS[5], user) or '0') == admittedAt
  if not spent and admittedAt + tonumber(config.admitMs) > now then return {1, admittedAt, now} end
  -- the admission lapsed unused, or bought its order: queue again, as a newcomer
  redis.call('hdel', KEYS[4], user)
  redis.call('hdel', KEYS[5], user)
end
local score = redis.call('zscore', KEYS[3], user)
if not score then
  local window = math.floor((now - tonumber(config.openAt)) / tonumber(config.shuffleMs))
  if window < 0 then window = 0 end
  score = string.format('%.12f', window + tonumber(ARGV[2]))
  redis.call('zadd', KEYS[3], score, user)
  redis.call('hincrby', KEYS[2], 'joined', 1)
  redis.call('hsetnx', KEYS[2], 'firstJoin', now)
  -- A buyer joining an empty room with credit saved is admitted now, not at the next call.
  advance(config, KEYS[2], KEYS[3], KEYS[4], KEYS[6], KEYS[8], now + 0)
  admittedAt = tonumber(redis.call('hget', KEYS[4], user) or '0')
  if admittedAt > 0 then return {1, admittedAt, now} end
end
return {0, redis.call('zrank', KEYS[3], user) + 1, score, now, config.rate}

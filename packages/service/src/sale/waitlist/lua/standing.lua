--[[
  Where a buyer stands in a sale's waitlist. Writes nothing. An offer whose end has passed (Redis
  clock) is not the buyer's any more, whether or not the sweeper has passed it on yet.

  KEYS[1]  waitlist: sorted set {buyer: join sequence}
  KEYS[2]  offers: sorted set {buyer: when the offer ends, ms}
  ARGV[1]  user id

  Returns  {0} not in line and no offer; {1, place in line (1: next), buyers in line} waiting;
           {2, ms left, when the offer ends (ms since epoch, Redis clock)} holding an offer.
]]
local offer = redis.call('zscore', KEYS[2], ARGV[1])
if offer then
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if tonumber(offer) > now then
    return { 2, tonumber(offer) - now, tonumber(offer) }
  end
end
local rank = redis.call('zrank', KEYS[1], ARGV[1])
if not rank then return { 0 } end
return { 1, rank + 1, redis.call('zcard', KEYS[1]) }

--[[
  A buyer leaves a sale's waitlist; an offer they hold is declined and passes to the next in line
  at once (give-back.lua), instead of waiting for its end.

  KEYS[1]  stock
  KEYS[2]  open: the per-user limit; exists until the sale ends
  KEYS[3]  buyers: hash {user id: units held}
  KEYS[4]  recovering: exists while the sale is being rebuilt from the record
  KEYS[5]  waitlist: sorted set {buyer: join sequence}
  KEYS[6]  offers: sorted set {buyer: when the offer ends, ms}
  KEYS[7]  restock channel (shard channel of the sale)
  ARGV[1]  user id
  ARGV[2]  how long an offer passed on holds its unit, ms

  Returns  1 left the line; 2 declined an offer; 0 was neither in line nor offered; -8 the sale is
           being recovered.
]]
-- @include give-back.lua
if redis.call('exists', KEYS[4]) == 1 then return -8 end
if redis.call('zrem', KEYS[5], ARGV[1]) == 1 then return 1 end
if redis.call('zrem', KEYS[6], ARGV[1]) == 0 then return 0 end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local wl = { open = KEYS[2], buyers = KEYS[3], waitlist = KEYS[5], offers = KEYS[6], now = now, offer_ms = tonumber(ARGV[2]) }
if give_back(KEYS[1], wl, 1) > 0 then
  redis.call('spublish', KEYS[7], 'release')
end
return 2

--[[
  The expiry sweeper's step for one sale: every order whose payment deadline has passed (Redis clock)
  and that nobody settled first expires, giving its units back (to the sale's waitlist first), and
  every offer to a waitlisted buyer whose time is up passes to the next in line
  (waitlist/lua/give-back.lua). Any number of sweepers may run it at once: the script is atomic and
  each order is settled once (see settle-core.lua, expire-core.lua).

  KEYS[1]  deadlines: sorted set of unpaid orders "<order>:<user>:<qty>" by deadline (ms)
  KEYS[2]  settled: hash {order id: paid | cancelled | expired}
  KEYS[3]  stock
  KEYS[4]  buyers: hash {user id: units held}
  KEYS[5]  orders stream
  KEYS[6]  restock channel (shard channel of the sale)
  KEYS[7]  recovering: exists while the sale is being rebuilt from the record (nothing expires then)
  KEYS[8]  open: the per-user limit; exists until the sale ends
  KEYS[9]  waitlist: sorted set {buyer: join sequence} (waitlist/)
  KEYS[10] offers: sorted set {buyer: when the offer ends, ms}
  ARGV[1]  orders (and lapsed offers) at most in this call
  ARGV[2]  how long `settled` is kept after its last change, ms
  ARGV[3]  how long an offer to a waitlisted buyer holds its unit, ms

  Returns  {orders expired now, ms until the next deadline of an order or an offer (-1: none left, or
           the sale is recovering), offers lapsed now}
]]
-- @include expire-core.lua
if redis.call('exists', KEYS[7]) == 1 then
  return { 0, -1, 0 }
end
local wl = { open = KEYS[8], buyers = KEYS[4], waitlist = KEYS[9], offers = KEYS[10], offer_ms = tonumber(ARGV[3]) }
local expired, next_ms, restocked = expire_due(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], tonumber(ARGV[1]), ARGV[2], wl)
-- Offers whose time is up pass to the next in line (expire_due set wl.now).
local lapsed, to_stock = lapse_offers(KEYS[3], wl, tonumber(ARGV[1]))
restocked = restocked + to_stock
if restocked > 0 then
  redis.call('spublish', KEYS[6], 'release')
end
local next_offer = redis.call('zrange', KEYS[10], 0, 0, 'WITHSCORES')
if next_offer[2] then
  local offer_ms = math.max(0, tonumber(next_offer[2]) - wl.now)
  if next_ms < 0 or offer_ms < next_ms then
    next_ms = offer_ms
  end
end
return { expired, next_ms, lapsed }

--[[
  A buyer pays or cancels an order (the caller checked that the record holds it as confirmed and that
  it is the buyer's). An order past its deadline expires instead, whether or not the sweeper has come
  by yet: the deadline is exact, on Redis's clock. Units given back go to the sale's waitlist first
  (waitlist/lua/give-back.lua); the restock message goes out only for units that reached the stock.

  KEYS[1]  settled: hash {order id: paid | cancelled | expired}
  KEYS[2]  deadlines: sorted set of unpaid orders "<order>:<user>:<qty>" by deadline (ms)
  KEYS[3]  stock
  KEYS[4]  buyers: hash {user id: units held}
  KEYS[5]  orders stream
  KEYS[6]  restock channel (shard channel of the sale)
  KEYS[7]  recovering: exists while the sale is being rebuilt from the record
  KEYS[8]  open: the per-user limit; exists until the sale ends
  KEYS[9]  waitlist: sorted set {buyer: join sequence} (waitlist/)
  KEYS[10] offers: sorted set {buyer: when the offer ends, ms}
  ARGV[1]  order id
  ARGV[2]  user id
  ARGV[3]  quantity
  ARGV[4]  the state asked for: paid | cancelled
  ARGV[5]  payment deadline, ms since epoch (0: the sale has no payment window)
  ARGV[6]  how long `settled` is kept after its last change, ms
  ARGV[7]  how long an offer to a waitlisted buyer holds its unit, ms

  Returns  the order's final state, set now or before: paid | cancelled | expired; or `recovering`
           (nothing done: the sale is being rebuilt from the record, try again shortly).
]]
-- @include settle-core.lua
if redis.call('exists', KEYS[7]) == 1 then
  return 'recovering'
end
local previous = redis.call('hget', KEYS[1], ARGV[1])
if previous then
  return previous
end
local state = ARGV[4]
local now = now_ms()
local deadline = tonumber(ARGV[5])
if deadline > 0 and now >= deadline then
  state = 'expired'
end
local quantity = tonumber(ARGV[3])
redis.call('zrem', KEYS[2], ARGV[1] .. ':' .. ARGV[2] .. ':' .. ARGV[3])
local wl = { open = KEYS[8], buyers = KEYS[4], waitlist = KEYS[9], offers = KEYS[10], now = now, offer_ms = tonumber(ARGV[7]) }
local _, to_stock = settle(KEYS[1], KEYS[3], KEYS[4], KEYS[5], ARGV[1], ARGV[2], quantity, state, ARGV[6], wl)
if to_stock > 0 then
  redis.call('spublish', KEYS[6], 'release')
end
return state

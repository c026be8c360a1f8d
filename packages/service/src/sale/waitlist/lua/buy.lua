--[[
  A waitlisted buyer buys the unit offered to them: in one step the offer is checked (on the Redis
  clock) and spent, the per-user limit checked and the buyer's count raised, and the order appended to
  the sale's stream like any reservation (reserve-core.lua's entry), so the pipeline records it. The
  unit was held apart from the stock, so the stock does not move: stock + offers + orders stays the
  sale's stock. A repeated Idempotency-Key answers its original order first (idempotency.lua). Offers
  whose end has passed are passed on first (give-back.lua), so a buyer cannot buy after their offer's
  end even before the sweeper comes by. A buyer at the limit by now cannot use the offer: it passes on.

  KEYS[1]  not-before: exists until the sale starts
  KEYS[2]  open: the per-user limit; exists until the sale ends
  KEYS[3]  stock
  KEYS[4]  recovering: exists while the sale is being rebuilt from the record
  KEYS[5]  buyers: hash {user id: units held}
  KEYS[6]  orders stream
  KEYS[7]  the (user, key) record "<orderId>:<quantity>"; without a key, any key of the sale
  KEYS[8]  waitlist: sorted set {buyer: join sequence}
  KEYS[9]  offers: sorted set {buyer: when the offer ends, ms}
  KEYS[10] restock channel (shard channel of the sale)
  ARGV[1]  user id
  ARGV[2]  order id for the new order
  ARGV[3]  how long to remember the key, s
  ARGV[4]  the Idempotency-Key, or ''
  ARGV[5]  how long an offer passed on holds its unit, ms
  ARGV[6]  optional: the purchase's W3C traceparent, kept in the stream entry (field tp)

  Returns  1 bought (the order is ARGV[2], one unit); the original order id (a string) for a repeated
           key; -1 no such sale; -2 not started; -3 ended; -5 the buyer is at the per-user limit (the
           offer passed on); -6 the key was used with another quantity; -8 the sale is being
           recovered; -14 the buyer holds no offer; -15 the buyer's offer ended (passed on).
]]
-- @include ../../idempotency.lua
-- @include give-back.lua
local idem = nil
if ARGV[4] ~= '' then
  idem = ARGV[4]
  local previous = previousOrder(KEYS[7], '1')
  if previous then
    return previous
  end
end
local sale = redis.call('mget', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
if sale[4] then return -8 end
if sale[1] then return -2 end
if not sale[3] then return -1 end
if not sale[2] then return -3 end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local wl = { open = KEYS[2], buyers = KEYS[5], waitlist = KEYS[8], offers = KEYS[9], now = now, offer_ms = tonumber(ARGV[5]) }
local user = ARGV[1]
local ends = redis.call('zscore', KEYS[9], user)
local _, to_stock = lapse_offers(KEYS[3], wl, 100)
local answer = nil
if not ends then
  answer = -14
elseif tonumber(ends) <= now then
  answer = -15
elseif tonumber(redis.call('hget', KEYS[5], user) or '0') + 1 > tonumber(sale[2]) then
  redis.call('zrem', KEYS[9], user)
  to_stock = to_stock + give_back(KEYS[3], wl, 1)
  answer = -5
end
if to_stock > 0 then
  redis.call('spublish', KEYS[10], 'release')
end
if answer then
  return answer
end
redis.call('zrem', KEYS[9], user)
redis.call('hincrby', KEYS[5], user, 1)
local entry = { 'order', ARGV[2], 'user', user, 'qty', '1' }
if idem then
  table.insert(entry, 'idem')
  table.insert(entry, idem)
end
if ARGV[6] and ARGV[6] ~= '' then
  table.insert(entry, 'tp')
  table.insert(entry, ARGV[6])
end
redis.call('xadd', KEYS[6], '*', unpack(entry))
if idem then
  redis.call('set', KEYS[7], ARGV[2] .. ':1', 'EX', ARGV[3])
end
return 1

--[[
  Fragment (included by settle.lua, expire-core.lua and the split sale's settle-part.lua): settling
  one order, the same way for a buyer's request and for the expiry sweeper.

  The sale's `settled` hash is the arbiter: an order gets a field there once (HSETNX), by whichever
  transition comes first; the field is the order's final state. Cancelled and expired orders give
  their units back to the stock and free the buyer's limit (a buyer holding nothing has no field, so
  the reservation script's HSETNX sees a new buyer). The transition is appended to the sale's stream,
  for the order pipeline to apply to the record (a compare-and-set on the status there).
  `settled` keeps a sliding TTL: long enough to outlive any redelivery of the order's entries.
  With `wl` (a sale of one part: see waitlist/lua/give-back.lua), the units go to the sale's waitlist
  first, as offers held apart from the stock; without it (a split sale's part), to the stock.
]]
-- @include ../waitlist/lua/give-back.lua
local function now_ms()
  local time = redis.call('time')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- Returns true if this call settled the order, false if it was settled before; then the units that
-- went back to the stock (0 when they went to the waitlist as offers, or the order was paid).
local function settle(settled, stock, buyers, stream, order, user, quantity, state, settled_ttl_ms, wl)
  if redis.call('hsetnx', settled, order, state) == 0 then
    return false, 0
  end
  redis.call('pexpire', settled, settled_ttl_ms)
  local to_stock = 0
  if state ~= 'paid' then
    -- The buyer's limit is freed first: a buyer cancelling while in line may be offered a unit.
    if redis.call('hincrby', buyers, user, -quantity) <= 0 then
      redis.call('hdel', buyers, user)
    end
    to_stock = give_back(stock, wl, quantity)
  end
  redis.call('xadd', stream, '*', 'event', state, 'order', order, 'user', user, 'qty', quantity)
  return true, to_stock
end

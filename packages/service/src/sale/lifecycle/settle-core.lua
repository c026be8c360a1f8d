--[[
  Fragment (included by settle.lua, expire-core.lua and the split sale's settle-part.lua): settling
  one order, the same way for a buyer's request and for the expiry sweeper.

  The sale's `settled` hash is the arbiter: an order gets a field there once (HSETNX), by whichever
  transition comes first; the field is the order's final state. Cancelled and expired orders give
  their units back to the stock and free the buyer's limit (a buyer holding nothing has no field, so
  the reservation script's HSETNX sees a new buyer). The transition is appended to the sale's stream,
  for the order pipeline to apply to the record (a compare-and-set on the status there).
  `settled` keeps a sliding TTL: long enough to outlive any redelivery of the order's entries.
]]
local function now_ms()
  local time = redis.call('time')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- Returns true if this call settled the order, false if it was settled before.
local function settle(settled, stock, buyers, stream, order, user, quantity, state, settled_ttl_ms)
  if redis.call('hsetnx', settled, order, state) == 0 then
    return false
  end
  redis.call('pexpire', settled, settled_ttl_ms)
  if state ~= 'paid' then
    redis.call('incrby', stock, quantity)
    if redis.call('hincrby', buyers, user, -quantity) <= 0 then
      redis.call('hdel', buyers, user)
    end
  end
  redis.call('xadd', stream, '*', 'event', state, 'order', order, 'user', user, 'qty', quantity)
  return true
end

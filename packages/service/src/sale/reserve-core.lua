--[[
  Fragment (included by reserve.lua and reserve-idempotent.lua): the reservation rule.

  The time window needs no clock call: `not_before` expires at the start and `open` at the end of the
  sale (PXAT, set by warm-sale.lua), so Redis's own clock decides; the order's time is its stream
  entry id. Stock and limit are checked before anything is written, and a user over the limit is
  undone in the same script, so a refusal changes nothing.
  Returns {1, order_id} or a refusal {code} (see reserve.lua).
]]
local function reserve(meta, not_before, open, buyers, stream, user, quantity_arg, order_id)
  local window = redis.call('mget', not_before, open)
  if window[1] then
    return { -2 }
  end
  if not window[2] then
    if redis.call('exists', meta) == 0 then
      return { -1 }
    end
    return { -3 }
  end
  local sale = redis.call('hmget', meta, 'remaining', 'limit')
  local quantity = tonumber(quantity_arg)
  if tonumber(sale[1]) < quantity then
    return { -4 }
  end
  if redis.call('hincrby', buyers, user, quantity) > tonumber(sale[2]) then
    redis.call('hincrby', buyers, user, -quantity)
    return { -5 }
  end
  redis.call('hincrby', meta, 'remaining', -quantity)
  redis.call('xadd', stream, '*', 'order', order_id, 'user', user, 'qty', quantity_arg)
  return { 1, order_id }
end

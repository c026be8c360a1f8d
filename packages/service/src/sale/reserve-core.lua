--[[
  Fragment (included by reserve.lua and reserve-idempotent.lua): the reservation rule.

  The time window needs no clock call: `not_before` expires at the start and `open` at the end of the
  sale (PXAT, set by warm-sale.lua), so Redis's own clock decides; `open` holds the per-user limit, so
  one MGET reads window, limit, stock and the recovery flag (the sale is being rebuilt from the record:
  nothing is sold until that is done). Every check runs before the first write, so a refusal changes
  nothing. A first purchase by a user is one HSETNX (check and write); only a returning buyer costs an
  HGET and an HINCRBY. The reply is an integer (the caller issued the order id itself). An
  Idempotency-Key goes into the stream entry, so the record keeps it and a recovery can restore it;
  so does the purchase's W3C traceparent when it is traced (field `tp`), so the order pipeline's
  recording joins the buyer's trace. An untraced purchase writes the entry as before.

  Returns 1 reserved; -1 no such sale; -2 not started; -3 ended; {-4, ms until the sale ends} sold
  out, no unit left; -5 the user's limit would be exceeded; -7 fewer units left than asked for;
  -8 the sale is being recovered (try again shortly).
]]
local function reserve(not_before, open, stock, recovering, buyers, stream, user, quantity_arg, order_id, idem, tp)
  local sale = redis.call('mget', not_before, open, stock, recovering)
  if sale[4] then
    return -8
  end
  if sale[1] then
    return -2
  end
  if not sale[3] then
    return -1
  end
  if not sale[2] then
    return -3
  end
  local quantity = tonumber(quantity_arg)
  local remaining = tonumber(sale[3])
  if remaining < quantity then
    if remaining > 0 then
      return -7
    end
    return { -4, redis.call('pttl', open) }
  end
  local limit = tonumber(sale[2])
  if quantity > limit then
    return -5
  end
  if redis.call('hsetnx', buyers, user, quantity) == 0 then
    if tonumber(redis.call('hget', buyers, user)) + quantity > limit then
      return -5
    end
    redis.call('hincrby', buyers, user, quantity)
  end
  redis.call('decrby', stock, quantity)
  if tp and tp ~= '' then
    if idem then
      redis.call('xadd', stream, '*', 'order', order_id, 'user', user, 'qty', quantity_arg, 'idem', idem, 'tp', tp)
    else
      redis.call('xadd', stream, '*', 'order', order_id, 'user', user, 'qty', quantity_arg, 'tp', tp)
    end
  elseif idem then
    redis.call('xadd', stream, '*', 'order', order_id, 'user', user, 'qty', quantity_arg, 'idem', idem)
  else
    redis.call('xadd', stream, '*', 'order', order_id, 'user', user, 'qty', quantity_arg)
  end
  return 1
end

--[[
  Fragment (included by reserve-idempotent.lua, reserve-admitted.lua and the split sale's
  reserve-part-idempotent.lua): a repeated Idempotency-Key answers its original order.

  previousOrder(record, quantity) — `record` is the (user, key) record's key name, "<orderId>:<quantity>"
  once the key bought; `quantity` the request's (ARGV string). Returns nil for a key not seen, the
  original order id (a string) for a repeat with the same quantity, -6 for one with another quantity.
]]
local function previousOrder(record, quantity_arg)
  local previous = redis.call('get', record)
  if not previous then
    return nil
  end
  local order_id, quantity = string.match(previous, '^(%d+):(%d+)$')
  if quantity ~= quantity_arg then
    return -6
  end
  return order_id
end

--[[
  Reads, in one atomic step, what reconciliation needs from Redis for one sale.

  KEYS[1]  stock
  KEYS[2]  pending: hash {order id: "<user id>:<quantity>"}, reservations not yet recorded

  Returns  {stock or -1 if missing, units in pending reservations}
]]
local stock = redis.call('get', KEYS[1])
local units = 0
for _, value in ipairs(redis.call('hvals', KEYS[2])) do
  units = units + tonumber(string.match(value, ':(%d+)$'))
end
return { tonumber(stock or '-1'), units }

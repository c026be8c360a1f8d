--[[
  Opens recorded orders for payment: the order pipeline calls it after committing confirmed orders of a
  sale with a payment window, so the sweeper can expire them. An order settled meanwhile (paid or
  cancelled right after it was recorded, or a redelivered entry of an order settled long ago) stays
  closed.

  KEYS[1]  deadlines: sorted set of unpaid orders "<order>:<user>:<qty>" by deadline (ms)
  KEYS[2]  settled: hash {order id: paid | cancelled | expired}
  ARGV     pairs: member "<order>:<user>:<qty>", deadline (ms since epoch)

  Returns  the number of orders opened.
]]
local opened = 0
for i = 1, #ARGV - 1, 2 do
  local order = string.match(ARGV[i], '^(%d+):')
  if order and redis.call('hexists', KEYS[2], order) == 0 then
    redis.call('zadd', KEYS[1], ARGV[i + 1], ARGV[i])
    opened = opened + 1
  end
end
return opened

--[[
  Reserves units of a sale for a user, atomically: idempotency, time window (Redis server clock),
  per-user limit, stock; then records the buyer and appends the order to the sale's stream.

  KEYS[1]  meta: hash {stock, startsAt, endsAt, limit} (times in ms since epoch)
  KEYS[2]  stock: integer, units left
  KEYS[3]  buyers: hash {user id: units reserved}
  KEYS[4]  orders stream
  KEYS[5]  pending: hash {order id: "<user id>:<quantity>"}, reservations not yet recorded
  KEYS[6]  idempotency record of (user, Idempotency-Key): "<orderId>:<quantity>" (unused if ARGV[4] = 0)
  ARGV[1]  user id
  ARGV[2]  quantity (integer >= 1)
  ARGV[3]  order id for a new reservation
  ARGV[4]  1 if the request carries an Idempotency-Key, else 0
  ARGV[5]  how long to remember the Idempotency-Key, in seconds

  Returns  {1, orderId} reserved; {2, orderId} the same Idempotency-Key was already used for the same
           quantity (the original order); {-1} no such sale; {-2} not started; {-3} ended;
           {-4} sold out; {-5} the user's limit would be exceeded; {-6} Idempotency-Key reused for a
           different quantity.
]]
if ARGV[4] == '1' then
  local previous = redis.call('get', KEYS[6])
  if previous then
    local order_id, quantity = string.match(previous, '^(%d+):(%d+)$')
    if quantity ~= ARGV[2] then
      return { -6 }
    end
    return { 2, order_id }
  end
end
local meta = redis.call('hmget', KEYS[1], 'startsAt', 'endsAt', 'limit')
if not meta[1] then
  return { -1 }
end
local clock = redis.call('time')
local now = clock[1] * 1000 + math.floor(clock[2] / 1000)
if now < tonumber(meta[1]) then
  return { -2 }
end
if now >= tonumber(meta[2]) then
  return { -3 }
end
local quantity = tonumber(ARGV[2])
local bought = tonumber(redis.call('hget', KEYS[3], ARGV[1]) or '0')
if bought + quantity > tonumber(meta[3]) then
  return { -5 }
end
if tonumber(redis.call('get', KEYS[2]) or '0') < quantity then
  return { -4 }
end
redis.call('decrby', KEYS[2], quantity)
redis.call('hincrby', KEYS[3], ARGV[1], quantity)
redis.call('xadd', KEYS[4], '*', 'order', ARGV[3], 'user', ARGV[1], 'qty', ARGV[2], 'at', now)
redis.call('hset', KEYS[5], ARGV[3], ARGV[1] .. ':' .. ARGV[2])
if ARGV[4] == '1' then
  redis.call('set', KEYS[6], ARGV[3] .. ':' .. ARGV[2], 'EX', ARGV[5])
end
return { 1, ARGV[3] }

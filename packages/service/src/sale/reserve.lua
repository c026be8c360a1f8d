--[[
  Reserves units of a sale for a user, atomically: time window (Redis server clock), stock,
  per-user limit; then records the buyer and appends the order to the sale's stream.

  KEYS[1]  not-before: exists until the sale starts
  KEYS[2]  open: the per-user limit; exists until the sale ends
  KEYS[3]  stock: units left
  KEYS[4]  buyers: hash {user id: units held}
  KEYS[5]  orders stream
  KEYS[6]  recovering: exists while the sale is being rebuilt from the record
  ARGV[1]  user id
  ARGV[2]  quantity (integer >= 1)
  ARGV[3]  order id for a new reservation
  ARGV[4]  optional: the purchase's W3C traceparent, kept in the stream entry (field tp)

  Returns  1 reserved (the order is ARGV[3]); -1 no such sale; -2 not started; -3 ended;
           {-4, ms until the sale ends} sold out, no unit left; -5 the user's limit would be exceeded;
           -7 fewer units left than asked for; -8 the sale is being recovered.
]]
-- @include reserve-core.lua
return reserve(KEYS[1], KEYS[2], KEYS[3], KEYS[6], KEYS[4], KEYS[5], ARGV[1], ARGV[2], ARGV[3], nil, ARGV[4])

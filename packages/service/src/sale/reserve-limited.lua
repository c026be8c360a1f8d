--[[
  reserve.lua with the per-user rate limit checked in the same round trip: the attempt is counted
  first (user-rate-core.lua), and an attempt over the limit is refused before anything of the sale
  is read or written.

  KEYS[1]  not-before: exists until the sale starts
  KEYS[2]  open: the per-user limit; exists until the sale ends
  KEYS[3]  stock: units left
  KEYS[4]  buyers: hash {user id: units held}
  KEYS[5]  orders stream
  KEYS[6]  recovering: exists while the sale is being rebuilt from the record
  KEYS[7]  the user's attempt counter on this sale (SaleKeys.userRate)
  ARGV[1]  user id
  ARGV[2]  quantity (integer >= 1)
  ARGV[3]  order id for a new reservation
  ARGV[4]  attempts allowed per user and second (integer >= 1)
  ARGV[5]  optional: the purchase's W3C traceparent, kept in the stream entry (field tp)

  Returns  what reserve.lua returns, or {-13, ms until the window ends} when the user is over the
           rate limit (nothing else read or written).
]]
-- @include reserve-core.lua
-- @include user-rate-core.lua
local ttl = rate_limited(KEYS[7], ARGV[4])
if ttl then
  return { -13, ttl }
end
return reserve(KEYS[1], KEYS[2], KEYS[3], KEYS[6], KEYS[4], KEYS[5], ARGV[1], ARGV[2], ARGV[3], nil, ARGV[5])

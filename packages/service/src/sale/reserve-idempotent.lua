--[[
  reserve.lua for a request with an Idempotency-Key: the same key from the same user answers the
  original order instead of reserving again.

  KEYS[1..6] as in reserve.lua
  KEYS[7]  the (user, key) record: "<orderId>:<quantity>"
  ARGV[1..3] as in reserve.lua
  ARGV[4]  how long to remember the key, in seconds
  ARGV[5]  the Idempotency-Key (written into the stream entry, so the record keeps it)
  ARGV[6]  optional: the purchase's W3C traceparent, kept in the stream entry (field tp)

  Returns  as reserve.lua, plus the original order id (a string) for a repeated key with the same
           quantity, and -6 for a repeated key with a different quantity.
]]
-- @include reserve-core.lua
-- @include idempotency.lua
local previous = previousOrder(KEYS[7], ARGV[2])
if previous then
  return previous
end
local result = reserve(KEYS[1], KEYS[2], KEYS[3], KEYS[6], KEYS[4], KEYS[5], ARGV[1], ARGV[2], ARGV[3], ARGV[5], ARGV[6])
if result == 1 then
  redis.call('set', KEYS[7], ARGV[3] .. ':' .. ARGV[2], 'EX', ARGV[4])
end
return result

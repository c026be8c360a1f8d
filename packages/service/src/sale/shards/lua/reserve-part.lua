--[[
  reserve.lua on one part of a split sale (sale/shards/): the same rule on the part's keys, and a
  reservation bumps the part's version (the sold-out proof reads it). A part without the units asked
  for answers -4 or -7 like a sale: the caller moves units from another part before it may say
  "sold out".

  KEYS[1]  not-before: exists until the sale starts
  KEYS[2]  open: the per-user limit; exists until the sale ends
  KEYS[3]  stock: units left in this part
  KEYS[4]  buyers: hash {user id: units held} of the part's users
  KEYS[5]  the part's orders stream
  KEYS[6]  recovering: exists while the part is being rebuilt from the record
  KEYS[7]  version: bumped when the part's stock changes
  ARGV[1]  user id (its part is this one)
  ARGV[2]  quantity (integer >= 1)
  ARGV[3]  order id for a new reservation
  ARGV[4]  optional: the purchase's W3C traceparent, kept in the stream entry (field tp)

  Returns  as reserve.lua: 1 reserved; -1 no such part; -2 not started; -3 ended;
           {-4, ms until the sale ends} no unit left in the part; -5 the user's limit would be
           exceeded; -7 fewer units left in the part than asked for; -8 the part is being recovered.
]]
-- @include ../../reserve-core.lua
local result = reserve(KEYS[1], KEYS[2], KEYS[3], KEYS[6], KEYS[4], KEYS[5], ARGV[1], ARGV[2], ARGV[3], nil, ARGV[4])
if result == 1 then
  redis.call('incr', KEYS[7])
end
return result

--[[
  expire.lua on one part of a split sale: the sweeper's step for the part. Units given back bump the
  part's version.

  KEYS[1]  deadlines: sorted set of unpaid orders "<order>:<user>:<qty>" by deadline (ms)
  KEYS[2]  settled: hash {order id: paid | cancelled | expired}
  KEYS[3]  stock of the part
  KEYS[4]  buyers: hash {user id: units held}
  KEYS[5]  the part's orders stream
  KEYS[6]  restock channel of the part
  KEYS[7]  recovering: exists while the part is being rebuilt from the record
  KEYS[8]  version of the part
  ARGV[1]  orders at most in this call
  ARGV[2]  how long `settled` is kept after its last change, ms

  Returns  {orders expired now, ms until the next deadline (-1: none left, or the part is recovering)}
]]
-- @include ../../lifecycle/expire-core.lua
if redis.call('exists', KEYS[7]) == 1 then
  return { 0, -1 }
end
local expired, next_ms = expire_due(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], tonumber(ARGV[1]), ARGV[2])
if expired > 0 then
  redis.call('incr', KEYS[8])
  redis.call('spublish', KEYS[6], 'release')
end
return { expired, next_ms }

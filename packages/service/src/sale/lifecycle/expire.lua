--[[
  The expiry sweeper's step for one sale: every order whose payment deadline has passed (Redis clock)
  and that nobody settled first expires, giving its units back. Any number of sweepers may run it at
  once: the script is atomic and each order is settled once (see settle-core.lua, expire-core.lua).

  KEYS[1]  deadlines: sorted set of unpaid orders "<order>:<user>:<qty>" by deadline (ms)
  KEYS[2]  settled: hash {order id: paid | cancelled | expired}
  KEYS[3]  stock
  KEYS[4]  buyers: hash {user id: units held}
  KEYS[5]  orders stream
  KEYS[6]  restock channel (shard channel of the sale)
  KEYS[7]  recovering: exists while the sale is being rebuilt from the record (nothing expires then)
  ARGV[1]  orders at most in this call
  ARGV[2]  how long `settled` is kept after its last change, ms

  Returns  {orders expired now, ms until the next deadline (-1: none left, or the sale is recovering)}
]]
-- @include expire-core.lua
if redis.call('exists', KEYS[7]) == 1 then
  return { 0, -1 }
end
local expired, next_ms = expire_due(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], tonumber(ARGV[1]), ARGV[2])
if expired > 0 then
  redis.call('spublish', KEYS[6], 'release')
end
return { expired, next_ms }

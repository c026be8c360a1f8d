--[[
  The expiry sweeper's step for one sale: every order whose payment deadline has passed (Redis clock)
  and that nobody settled first expires, giving its units back. Any number of sweepers may run it at
  once: the script is atomic and each order is settled once (see settle-core.lua).

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
-- @include settle-core.lua
if redis.call('exists', KEYS[7]) == 1 then
  return { 0, -1 }
end
local now = now_ms()
local due = redis.call('zrangebyscore', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local expired = 0
for _, member in ipairs(due) do
  redis.call('zrem', KEYS[1], member)
  local order, user, quantity = string.match(member, '^(%d+):([^:]+):(%d+)$')
  if order and settle(KEYS[2], KEYS[3], KEYS[4], KEYS[5], order, user, tonumber(quantity), 'expired', ARGV[2]) then
    expired = expired + 1
  end
end
if expired > 0 then
  redis.call('spublish', KEYS[6], 'release')
end
local next = redis.call('zrange', KEYS[1], 0, 0, 'WITHSCORES')
if next[2] then
  return { expired, math.max(0, tonumber(next[2]) - now) }
end
return { expired, -1 }

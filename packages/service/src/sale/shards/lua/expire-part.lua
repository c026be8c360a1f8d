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
-- @include ../../lifecycle/settle-core.lua
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
  redis.call('incr', KEYS[8])
  redis.call('spublish', KEYS[6], 'release')
end
local next = redis.call('zrange', KEYS[1], 0, 0, 'WITHSCORES')
if next[2] then
  return { expired, math.max(0, tonumber(next[2]) - now) }
end
return { expired, -1 }

--[[
  settle.lua on the order's part of a split sale (the part of its buyer): a buyer pays or cancels an
  order; past its deadline it expires instead. Units given back bump the part's version.

  KEYS[1]  settled: hash {order id: paid | cancelled | expired}
  KEYS[2]  deadlines: sorted set of unpaid orders "<order>:<user>:<qty>" by deadline (ms)
  KEYS[3]  stock of the part
  KEYS[4]  buyers: hash {user id: units held}
  KEYS[5]  the part's orders stream
  KEYS[6]  restock channel of the part
  KEYS[7]  recovering: exists while the part is being rebuilt from the record
  KEYS[8]  version of the part
  ARGV[1]  order id
  ARGV[2]  user id
  ARGV[3]  quantity
  ARGV[4]  the state asked for: paid | cancelled
  ARGV[5]  payment deadline, ms since epoch (0: the sale has no payment window)
  ARGV[6]  how long `settled` is kept after its last change, ms

  Returns  the order's final state, set now or before: paid | cancelled | expired; or `recovering`.
]]
-- @include ../../lifecycle/settle-core.lua
if redis.call('exists', KEYS[7]) == 1 then
  return 'recovering'
end
local previous = redis.call('hget', KEYS[1], ARGV[1])
if previous then
  return previous
end
local state = ARGV[4]
local deadline = tonumber(ARGV[5])
if deadline > 0 and now_ms() >= deadline then
  state = 'expired'
end
redis.call('zrem', KEYS[2], ARGV[1] .. ':' .. ARGV[2] .. ':' .. ARGV[3])
settle(KEYS[1], KEYS[3], KEYS[4], KEYS[5], ARGV[1], ARGV[2], tonumber(ARGV[3]), state, ARGV[6])
if state ~= 'paid' then
  redis.call('incr', KEYS[8])
  redis.call('spublish', KEYS[6], 'release')
end
return state

--[[
  BASELINE ONLY — the widely copied "hm-dianping" seckill script, kept faithful for the benchmark:
  it builds key names inside Lua (not Cluster-safe), has no time window, no idempotency, and a fixed
  global stream. lockstock's reserve.lua replaces it.

  KEYS     none (the anti-pattern: keys are built from ARGV)
  ARGV[1]  voucher id
  ARGV[2]  user id
  ARGV[3]  order id

  Returns  0 reserved; 1 sold out; 2 already bought.
]]
local voucherId = ARGV[1]
local userId = ARGV[2]
local orderId = ARGV[3]
local stockKey = 'seckill:stock:' .. voucherId
local orderKey = 'seckill:order:' .. voucherId
if tonumber(redis.call('get', stockKey)) <= 0 then
  return 1
end
if redis.call('sismember', orderKey, userId) == 1 then
  return 2
end
redis.call('incrby', stockKey, -1)
redis.call('sadd', orderKey, userId)
redis.call('xadd', 'stream.orders', '*', 'userId', userId, 'voucherId', voucherId, 'id', orderId)
return 0

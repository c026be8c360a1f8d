--[[
  A step of a rebuild: Idempotency-Keys the record holds go back, each for what is left of its 24 h,
  so a client retrying an unknown outcome gets its original order. A key Redis still has is kept.

  KEYS[1]  recovering (must hold ARGV[1])
  KEYS[2..] the (user, key) records of the sale, one per key
  ARGV[1]  token of this rebuild
  ARGV[2..] per key in KEYS[2..], two values: "<orderId>:<quantity>", seconds left

  Returns  1 written; 0 the token is not the flag's (nothing written)
]]
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
for i = 2, #KEYS do
  local at = 2 * (i - 1)
  redis.call('set', KEYS[i], ARGV[at], 'EX', ARGV[at + 1], 'NX')
end
return 1

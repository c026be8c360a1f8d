--[[
  A step of a rebuild: the final states the record holds go back into the sale's `settled` hash (the
  arbiter of each order's one transition), next to the ones Redis decided and the record has not
  applied yet. The record's state wins: it is what Redis decided before it lost it.

  KEYS[1]  recovering (must hold ARGV[1])
  KEYS[2]  settled: hash {order id: paid | cancelled | expired}
  ARGV[1]  token of this rebuild
  ARGV[2]  how long `settled` is kept after its last change, ms
  ARGV[3..] pairs: order id, final state

  Returns  1 written; 0 the token is not the flag's (nothing written)
]]
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
for i = 3, #ARGV - 1, 2 do
  redis.call('hset', KEYS[2], ARGV[i], ARGV[i + 1])
end
redis.call('pexpire', KEYS[2], ARGV[2])
return 1

--[[
  Lab exhibit (seed 004): a hash {total, released}; release the units only if all of them fit.
  KEYS[1]  hash {total, released}
  ARGV[1]  units asked for
  Returns  1 taken; 0 not enough left.
]]
local total = tonumber(redis.call('hget', KEYS[1], 'total'))
local released = tonumber(redis.call('hget', KEYS[1], 'released'))
if released + tonumber(ARGV[1]) > total then
  return 0
end
redis.call('hincrby', KEYS[1], 'released', ARGV[1])
return 1

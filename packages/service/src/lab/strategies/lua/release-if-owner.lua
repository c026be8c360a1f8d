--[[
  Lab exhibit (seeds 000-003): the owner-checked release of a hand-rolled lock.
  KEYS[1]  lock key
  ARGV[1]  owner
  Returns  1 released; 0 not the owner (or no lock).
]]
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0

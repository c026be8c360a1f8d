--[[
  Releases this master's vote if it is still the caller's (compare and delete).

  KEYS[1]  lock key
  ARGV[1]  owner id

  Returns  0 released; -1 no lock here; -2 held by another owner here.
]]
local holder = redis.call('get', KEYS[1])
if holder == ARGV[1] then
  redis.call('del', KEYS[1])
  return 0
end
if holder then
  return -2
end
return -1

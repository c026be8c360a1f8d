--[[
  Extends this master's vote if it is still the caller's (compare and PEXPIRE). Where the key is gone
  the caller may take the vote again with the acquire script, while a majority still holds it (see
  RedlockResource.extend).

  KEYS[1]  lock key
  ARGV[1]  owner id
  ARGV[2]  new lease in milliseconds

  Returns  1 extended; -1 no lock here; -2 held by another owner here.
]]
local holder = redis.call('get', KEYS[1])
if holder == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
if holder then
  return -2
end
return -1

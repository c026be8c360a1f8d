--[[
  Resets the lease of a mutex if the caller still owns it (used by extend() and the watchdog).

  KEYS[1]  lock key
  KEYS[2]  holder metadata (see mutex-acquire.lua): its TTL follows the lease; KEYS[1] again when
           the client keeps none
  ARGV[1]  owner id
  ARGV[2]  new lease in milliseconds

  Returns  1 extended; -1 no lock (expired or deleted); -2 held by another owner.
]]
local holder = redis.call('get', KEYS[1])
if holder == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  if KEYS[2] ~= KEYS[1] then
    redis.call('pexpire', KEYS[2], ARGV[2])
  end
  return 1
end
if holder then
  return -2
end
return -1

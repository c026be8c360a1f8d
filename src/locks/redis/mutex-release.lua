--[[
  Releases a mutex only if the caller still owns it, and wakes waiters.

  KEYS[1]  lock key
  KEYS[2]  unlock shard channel (same hash tag as the lock)
  ARGV[1]  owner id

  Returns  0 released (waiters notified); -1 no lock (expired or deleted); -2 held by another owner.
]]
local holder = redis.call('get', KEYS[1])
if holder == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call('spublish', KEYS[2], 'released')
  return 0
end
if holder then
  return -2
end
return -1

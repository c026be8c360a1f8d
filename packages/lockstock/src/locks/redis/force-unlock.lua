--[[
  Deletes a lock whoever holds it (administrative release) and wakes waiters.

  KEYS[1]  lock key (any lock type)
  KEYS[2]  unlock shard channel (same hash tag as the lock)

  Returns  1 if a lock was deleted, 0 if there was none. Publishes '' (anyone may try) on KEYS[2].
]]
if redis.call('del', KEYS[1]) == 1 then
  redis.call('spublish', KEYS[2], '')
  return 1
end
return 0

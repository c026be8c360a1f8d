--[[
  Releases one write hold; the last one frees the lock and wakes waiters (readers and writers).

  KEYS[1]  writer: hash {owner: hold count, '\0t': token, '\0h': holder record}: deleted with the
           last hold, holder record and all
  KEYS[2]  wake-up shard channel (same hash tag as the lock)
  ARGV[1]  owner id

  Publishes '' on KEYS[2] when the lock becomes free.
  Returns  n > 0 holds this owner still has; 0 released; -1 no lock; -2 held by another owner.
]]
-- @include hold-count.lua
local left = release_one_hold(KEYS[1], ARGV[1])
if left then
  return left
end
redis.call('del', KEYS[1])
redis.call('spublish', KEYS[2], '')
return 0

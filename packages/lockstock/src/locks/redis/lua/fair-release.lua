--[[
  Releases one hold of a fair lock; the last hold wakes only the next waiter in line.

  KEYS[1]  lock key (hash {owner: hold count})
  KEYS[2]  queue (see fair-queue.lua)
  KEYS[3]  waiter deadlines
  KEYS[4]  wake-up shard channel (same hash tag as the lock)
  ARGV[1]  owner id

  Publishes 'o:<owner>' on KEYS[4], naming the next live waiter, when the lock becomes free.
  Returns  n > 0 holds this owner still has; 0 released; -1 no lock; -2 held by another owner.
]]
-- @include hold-count.lua
-- @include fair-queue.lua
local left = release_one_hold(KEYS[1], ARGV[1])
if left then
  return left
end
redis.call('del', KEYS[1])
if redis.call('exists', KEYS[2]) == 1 then
  wake_head(KEYS[2], KEYS[3], KEYS[4], now_ms())
end
return 0

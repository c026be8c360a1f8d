--[[
  Counts a latch down by one; at zero the key is deleted and every waiter woken.

  KEYS[1]  count: integer (absent: zero)
  KEYS[2]  wake-up shard channel (same hash tag)

  Publishes '' on KEYS[2] when the count reaches zero.
  Returns  the count left (0 if it was zero already).
]]
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
local left = redis.call('decr', KEYS[1])
if left <= 0 then
  redis.call('del', KEYS[1])
  redis.call('spublish', KEYS[2], '')
  return 0
end
return left

--[[
  Releases one read hold; when the last reader leaves, a waiting writer is woken.

  KEYS[1]  readers: hash (see rw-readers.lua)
  KEYS[2]  wake-up shard channel (same hash tag as the lock)
  KEYS[3]  write intent: exists while a writer waits (see rw-write-acquire.lua)
  ARGV[1]  owner id

  Publishes '' on KEYS[2] when no reader is left and a writer waits. Only writers wait for readers,
  and a waiting writer keeps its intent alive (or tries again within the intent's lifetime anyway);
  a dead reader's fields keep the hash until a writer drops them, and that writer tries again when
  the dead lease ends.
  Returns  n > 0 holds this owner still has; 0 released; -1 no read hold (its lease ended).
]]
-- @include rw-readers.lua
local count = redis.call('hget', KEYS[1], ARGV[1])
if not count then
  return -1
end
if tonumber(count) > 1 then
  return redis.call('hincrby', KEYS[1], ARGV[1], -1)
end
redis.call('hdel', KEYS[1], ARGV[1], TOKEN .. ARGV[1], LEASE .. ARGV[1])
-- One EXISTS when nothing is left and no writer waits; a second only when one of the two is there.
if redis.call('exists', KEYS[1], KEYS[3]) == 1 and redis.call('exists', KEYS[1]) == 0 then
  redis.call('spublish', KEYS[2], '')
end
return 0

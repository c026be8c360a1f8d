--[[
  Releases one read hold; when the last reader leaves, waiters (writers) are woken.

  KEYS[1]  readers: hash (see rw-readers.lua)
  KEYS[2]  reader leases: zset
  KEYS[3]  wake-up shard channel (same hash tag as the lock)
  KEYS[4]  write intent: exists while a writer waits (see rw-write-acquire.lua)
  ARGV[1]  owner id

  Publishes '' on KEYS[3] when no reader is left and a writer waits. Only writers wait for readers,
  and a waiting writer keeps its intent alive (or tries again within the intent's lifetime anyway).
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
redis.call('hdel', KEYS[1], ARGV[1], TOKEN .. ARGV[1])
redis.call('zrem', KEYS[2], ARGV[1])
if redis.call('zcard', KEYS[2]) == 0 then
  redis.call('del', KEYS[1])
  if redis.call('exists', KEYS[4]) == 1 then
    redis.call('spublish', KEYS[3], '')
  end
end
return 0

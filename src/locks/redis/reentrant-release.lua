--[[
  Releases one hold of a reentrant lock; the last hold deletes it and wakes waiters.

  KEYS[1]  lock key (hash {owner: hold count})
  KEYS[2]  unlock shard channel (same hash tag as the lock)
  ARGV[1]  owner id

  Returns  n > 0 holds this owner still has; 0 released (waiters notified);
           -1 no lock (expired or deleted); -2 held by another owner.
]]
local count = redis.call('hget', KEYS[1], ARGV[1])
if not count then
  if redis.call('exists', KEYS[1]) == 1 then
    return -2
  end
  return -1
end
if tonumber(count) > 1 then
  return redis.call('hincrby', KEYS[1], ARGV[1], -1)
end
redis.call('del', KEYS[1])
redis.call('spublish', KEYS[2], 'released')
return 0

--[[
  Returns a permit (by its owner) and wakes the waiters of this client and others.

  KEYS[1]  permits: zset {owner: lease end}
  KEYS[2]  wake-up shard channel (same hash tag)
  ARGV[1]  owner id

  Publishes '' on KEYS[2] when a permit was returned.
  Returns  0 released; -1 the owner had no permit (its lease ended).
]]
if redis.call('zrem', KEYS[1], ARGV[1]) == 0 then
  return -1
end
redis.call('spublish', KEYS[2], '')
return 0

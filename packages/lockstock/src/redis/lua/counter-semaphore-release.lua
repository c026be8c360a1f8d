--[[
  Returns a permit of a counter semaphore and wakes waiters.

  KEYS[1]  permits in use: integer
  KEYS[2]  wake-up shard channel

  Publishes '' on KEYS[2] when a permit was returned.
  Returns  0 released; -1 no permit was in use.
]]
if tonumber(redis.call('get', KEYS[1]) or '0') <= 0 then
  return -1
end
if redis.call('decr', KEYS[1]) <= 0 then
  redis.call('del', KEYS[1])
end
redis.call('spublish', KEYS[2], '')
return 0

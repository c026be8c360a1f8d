--[[
  Deletes a lock whoever holds it (administrative release) and wakes its waiters.

  KEYS[1]     the lock's wake-up shard channel (same hash tag as the lock)
  KEYS[2..n]  the keys holding the lock's holders (whatever the kind: holder, readers, permits)

  Returns  1 if any holder key was deleted, 0 if there was none. Publishes '' (anyone may try) on
           KEYS[1] when it deleted something. Variadic: the key count comes from the caller.
]]
if #KEYS < 2 then
  return redis.error_reply('force-unlock needs a channel and at least one key')
end
if redis.call('del', unpack(KEYS, 2)) > 0 then
  redis.call('spublish', KEYS[1], '')
  return 1
end
return 0

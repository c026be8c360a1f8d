--[[
  Releases one hold of a reentrant lock; the last hold frees it and decides who goes next.

  KEYS[1]  lock key (hash {owner: hold count})
  KEYS[2]  unlock shard channel (same hash tag as the lock)
  KEYS[3]  waiting clients: zset (see client-turns.lua)
  ARGV[1]  owner id
  ARGV[2]  'handoff' | 'yield' | 'notify', as in mutex-release.lua
  ARGV[3]  client id of the caller
  ARGV[4]  turn window in milliseconds

  Publishes on KEYS[2], if another client waits (and not for 'handoff'), the id of the client
  whose turn it is.
  Returns  n > 0 holds this owner still has; 0 released;
           -1 no lock (expired or deleted); -2 held by another owner.
]]
-- @include client-turns.lua
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
if ARGV[2] == 'handoff' then
  return 0
end
local turn = next_client(KEYS[3], ARGV[3])
if not turn then
  return 0 -- no other client waits: nobody to notify
end
redis.call('hset', KEYS[1], TURN, turn)
redis.call('pexpire', KEYS[1], ARGV[4])
-- The message names the client whose turn it is, so the others need not try.
redis.call('spublish', KEYS[2], turn)
return 0

--[[
  Releases one hold of a reentrant lock; the last hold decides who holds it next.

  KEYS[1]  lock key (hash {owner: hold count, '\0t': token})
  KEYS[2]  fencing counter
  KEYS[3]  unlock shard channel (same hash tag as the lock)
  KEYS[4]  waiting clients: zset (see client-turns.lua)
  ARGV[1]  owner id
  ARGV[2]  'handoff' | 'yield' | 'notify', as in mutex-release.lua
  ARGV[3]  client id of the caller
  ARGV[4]  turn window in milliseconds
  ARGV[5]  owner id of the local waiter ('handoff' / 'yield'; absent with 'notify')
  ARGV[6]  lease of the local waiter in milliseconds ('handoff' / 'yield'; absent with 'notify')
  ARGV[7]  holder record of the local waiter, kept as '\0h' ('handoff' / 'yield'; '' or absent: none)

  Publishes on KEYS[3], when it gives another client the turn, 't:<client id>'.
  Returns  {token} (one-element array): the last hold was released and the lock handed to ARGV[5];
           n > 0 holds this owner still has; 0 released;
           -1 no lock (expired or deleted); -2 held by another owner.
]]
-- @include hold-count.lua
local left = release_one_hold(KEYS[1], ARGV[1])
if left then
  return left
end
redis.call('del', KEYS[1])
if ARGV[2] == 'notify' and redis.call('exists', KEYS[4]) == 0 then
  return 0 -- no local waiter, no other client waits: nobody to notify
end
-- Defined only past the common case (Lua makes a closure per local function on every call).
-- @include client-turns.lua
local next_is, turn = next_holder(KEYS[4], ARGV[2], ARGV[3])
if next_is == 'turn' then
  redis.call('hset', KEYS[1], TURN, turn)
  redis.call('pexpire', KEYS[1], ARGV[4])
  announce_turn(KEYS[4], KEYS[1], KEYS[3], ARGV[2], ARGV[3], turn)
  return 0
end
if next_is == 'free' then
  return 0 -- no other client waits: nobody to notify
end
local token = redis.call('incr', KEYS[2])
redis.call('hset', KEYS[1], ARGV[5], 1, '\0t', token)
if ARGV[7] and ARGV[7] ~= '' then
  redis.call('hset', KEYS[1], '\0h', ARGV[7])
end
redis.call('pexpire', KEYS[1], ARGV[6])
return { token }

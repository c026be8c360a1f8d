--[[
  Releases a mutex only if the caller still owns it, and decides who holds it next.

  KEYS[1]  lock key
  KEYS[2]  fencing counter
  KEYS[3]  unlock shard channel (same hash tag as the lock)
  KEYS[4]  waiting clients: zset (see client-turns.lua)
  KEYS[5]  holder metadata (see mutex-acquire.lua): deleted, or the local waiter's on a hand-off;
           KEYS[1] again when the client keeps none (its holders never wrote one: nothing to delete)
  ARGV[1]  owner id
  ARGV[2]  'handoff': hand the lock to ARGV[5], a waiter of the releasing client;
           'yield': hand it to ARGV[5] only if no other client waits, else give that client the turn
           and queue the releasing client behind it;
           'notify': no local waiter; give the turn to the longest-waiting client, if any
  ARGV[3]  client id of the caller
  ARGV[4]  turn window in milliseconds
  ARGV[5]  owner id of the local waiter ('handoff' / 'yield'; absent with 'notify')
  ARGV[6]  lease of the local waiter in milliseconds ('handoff' / 'yield'; absent with 'notify')
  ARGV[7]  holder record of the local waiter ('handoff' / 'yield'; '' or absent: none)

  Publishes on KEYS[3], when it gives another client the turn, 't:<client id>'.
  Returns  {token} (one-element array): handed to ARGV[5] with this fencing token;
           0 released; -1 no lock (expired or deleted); -2 held by another owner.
]]
local holder = redis.call('get', KEYS[1])
if holder ~= ARGV[1] then
  if holder then
    return -2
  end
  return -1
end
local records = KEYS[5] ~= KEYS[1]
if records then
  redis.call('del', KEYS[5])
end
if ARGV[2] == 'notify' and redis.call('exists', KEYS[4]) == 0 then
  redis.call('del', KEYS[1]) -- no local waiter, no other client waits: nobody to notify
  return 0
end
-- @include client-turns.lua
local next_is, turn = next_holder(KEYS[4], ARGV[2], ARGV[3])
if next_is == 'turn' then
  redis.call('set', KEYS[1], TURN .. turn, 'PX', ARGV[4])
  announce_turn(KEYS[4], KEYS[1], KEYS[3], ARGV[2], ARGV[3], turn)
  return 0
end
if next_is == 'free' then
  redis.call('del', KEYS[1]) -- no other client waits: nobody to notify
  return 0
end
redis.call('set', KEYS[1], ARGV[5], 'PX', ARGV[6])
if records and ARGV[7] and ARGV[7] ~= '' then
  redis.call('set', KEYS[5], ARGV[7], 'PX', ARGV[6])
end
return { redis.call('incr', KEYS[2]) }

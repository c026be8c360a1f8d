--[[
  Releases a mutex only if the caller still owns it, and decides who goes next.

  KEYS[1]  lock key
  KEYS[2]  unlock shard channel (same hash tag as the lock)
  KEYS[3]  waiting clients: zset (see client-turns.lua)
  ARGV[1]  owner id
  ARGV[2]  'handoff': a waiter of the releasing client takes the lock next (its attempt follows this
           script on the same connection), so nobody is notified;
           'yield': that waiter follows too, but the longest-waiting other client gets the turn;
           'notify': no local waiter; the longest-waiting client gets the turn
  ARGV[3]  client id of the caller
  ARGV[4]  turn window in milliseconds

  Publishes on KEYS[2], if another client waits (and not for 'handoff'), the id of the client
  whose turn it is.
  Returns  0 released; -1 no lock (expired or deleted); -2 held by another owner.
]]
-- @include client-turns.lua
local holder = redis.call('get', KEYS[1])
if holder ~= ARGV[1] then
  if holder then
    return -2
  end
  return -1
end
if ARGV[2] == 'handoff' then
  redis.call('del', KEYS[1])
  return 0
end
local turn = next_client(KEYS[3], ARGV[3])
if not turn then
  redis.call('del', KEYS[1]) -- no other client waits: nobody to notify
  return 0
end
redis.call('set', KEYS[1], TURN .. turn, 'PX', ARGV[4])
-- The message names the client whose turn it is, so the others need not try.
redis.call('spublish', KEYS[2], turn)
return 0

--[[
  Takes a mutex if it is free (and not reserved for another client's turn) and issues the next
  fencing token for the lock name.

  KEYS[1]  lock key: string holding the owner id
  KEYS[2]  fencing counter: integer, the last token issued for this name (never expires)
  KEYS[3]  waiting clients: zset {client id: first failed attempt, ms} (see client-turns.lua)
  KEYS[4]  turn: client id the free lock is reserved for (expires)
  ARGV[1]  owner id (unique per holder)
  ARGV[2]  lease in milliseconds
  ARGV[3]  client id of the caller
  ARGV[4]  1 if the caller will wait (keep its client in the queue on failure), else 0

  Returns  the fencing token (integer >= 1) when acquired;
           {ms} (one-element array) when not: the holder's remaining lease (-1 if it has no expiry),
           or how long the free lock stays reserved for another client.
]]
-- @include client-turns.lua
local turn = redis.call('get', KEYS[4])
if turn and turn ~= ARGV[3] then
  if ARGV[4] == '1' then
    enqueue(KEYS[3], ARGV[3])
  end
  return { redis.call('pttl', KEYS[4]) }
end
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if turn then
    redis.call('del', KEYS[4])
  end
  if ARGV[4] == '1' then
    redis.call('zrem', KEYS[3], ARGV[3])
  end
  return redis.call('incr', KEYS[2])
end
if ARGV[4] == '1' then
  enqueue(KEYS[3], ARGV[3])
end
return { redis.call('pttl', KEYS[1]) }

--[[
  Takes a mutex if it is free, or reserved for the caller's client (see client-turns.lua), and
  issues the next fencing token for the lock name.

  KEYS[1]  lock key: string holding the owner id (or a turn marker while reserved for a client)
  KEYS[2]  fencing counter: integer, the last token issued for this name (never expires)
  KEYS[3]  waiting clients: zset {client id: first failed attempt, ms}
  KEYS[4]  holder metadata: string, the holder's record (JSON), with the lock's lease as its TTL
           (written only with a record in ARGV[5]; a client that keeps none passes KEYS[1] again)
  ARGV[1]  owner id (unique per holder)
  ARGV[2]  lease in milliseconds
  ARGV[3]  client id of the caller
  ARGV[4]  1 if the caller will wait (keep its client in the queue on failure), else 0
  ARGV[5]  the caller's holder record, stored in KEYS[4] when it takes the lock ('' for none)

  Returns  the fencing token (integer >= 1) when acquired;
           {pttl} (one-element array) when not: the remaining lease of the holder, or of another
           client's turn; -1 if the key has no expiry.
]]
local taken = redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
if taken and ARGV[4] ~= '1' then
  if ARGV[5] ~= '' then
    redis.call('set', KEYS[4], ARGV[5], 'PX', ARGV[2])
  end
  return redis.call('incr', KEYS[2]) -- a first try that got it: no queue to leave, no turn to check
end
-- Defined only past the common case (Lua makes a closure per local function on every call).
-- @include client-turns.lua
if not taken and redis.call('get', KEYS[1]) == TURN .. ARGV[3] then
  taken = redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
if taken and ARGV[5] ~= '' then
  redis.call('set', KEYS[4], ARGV[5], 'PX', ARGV[2])
end
return acquired_or_queued(taken, KEYS[1], KEYS[2], KEYS[3], ARGV[3], ARGV[4])

--[[
  Takes or re-enters a reentrant lock (Redisson's RLock layout: a hash {owner: hold count}).

  KEYS[1]  lock key: hash {owner: hold count, '\0t': the holder's fencing token, '\0h': its holder
           record (JSON), when it gave one} (one owner at a time); while reserved for a client's turn, the hash holds only the turn marker field
  KEYS[2]  fencing counter: integer, the last token issued for this name (never expires)
  KEYS[3]  waiting clients: zset {client id: first failed attempt, ms} (see client-turns.lua)
  ARGV[1]  owner id
  ARGV[2]  lease in milliseconds
  ARGV[3]  client id of the caller
  ARGV[4]  1 if the caller will wait (keep its client in the queue on failure), else 0
  ARGV[5]  the caller's holder record ('' for none): kept with a first hold, not changed on re-entry

  Returns  the fencing token when acquired: a new token for a first hold, the holder's own token on
           re-entry (kept in the hash: the counter is shared by every kind under the name). Where Redisson returns nil on success we return
           the token; otherwise, like Redisson, the holder's remaining lease as {pttl}
           (one-element array; -1 if it has no expiry).
]]
-- @include client-turns.lua
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], 1)
  -- Re-entry never shortens the lease the outer hold is relying on.
  local ttl = redis.call('pttl', KEYS[1])
  if ttl >= 0 and ttl < tonumber(ARGV[2]) then
    redis.call('pexpire', KEYS[1], ARGV[2])
  end
  return tonumber(redis.call('hget', KEYS[1], '\0t') or '0')
end
local free = redis.call('exists', KEYS[1]) == 0
if not free and redis.call('hget', KEYS[1], TURN) == ARGV[3] then
  redis.call('del', KEYS[1])
  free = true
end
if free then
  local token = acquired_or_queued(true, KEYS[1], KEYS[2], KEYS[3], ARGV[3], ARGV[4])
  redis.call('hset', KEYS[1], ARGV[1], 1, '\0t', token)
  if ARGV[5] ~= '' then
    redis.call('hset', KEYS[1], '\0h', ARGV[5])
  end
  redis.call('pexpire', KEYS[1], ARGV[2])
  return token
end
return acquired_or_queued(false, KEYS[1], KEYS[2], KEYS[3], ARGV[3], ARGV[4])

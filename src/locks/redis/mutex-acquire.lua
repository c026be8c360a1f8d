--[[
  Takes a mutex if it is free and issues the next fencing token for the lock name.

  KEYS[1]  lock key: string holding the owner id
  KEYS[2]  fencing counter: integer, the last token issued for this name (never expires)
  ARGV[1]  owner id (unique per holder)
  ARGV[2]  lease in milliseconds

  Returns  the fencing token (integer >= 1) when acquired;
           {pttl} (one-element array) when another owner holds it: its remaining lease in ms,
           or -1 if that key has no expiry.
]]
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('incr', KEYS[2])
end
return { redis.call('pttl', KEYS[1]) }

--[[
  One Redlock vote: takes the lock on this master if it is free (SET NX PX), as in the Redis
  distributed-lock spec. Each master is independent: no fencing counter here (see fencing in
  RedlockClient: a counter on the masters can go backwards when one restarts without persistence).

  KEYS[1]  lock key: string holding the owner id
  ARGV[1]  owner id
  ARGV[2]  lease in milliseconds

  Returns  1 granted; {pttl} (one-element array) held by someone else: its remaining lease.
]]
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
return { redis.call('pttl', KEYS[1]) }

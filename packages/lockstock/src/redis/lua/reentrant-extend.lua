--[[
  Resets the lease of a reentrant lock if the caller holds it (used by extend() and the watchdog).

  KEYS[1]  lock key (hash {owner: hold count})
  ARGV[1]  owner id
  ARGV[2]  new lease in milliseconds

  Returns  1 extended; -1 no lock (expired or deleted); -2 held by another owner.
]]
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
if redis.call('exists', KEYS[1]) == 1 then
  return -2
end
return -1

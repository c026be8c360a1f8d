--[[
  Renews the lease on a snowflake worker id, only if the caller still holds it.

  KEYS[1]  worker id lease key: string holding the holder's instance id
  ARGV[1]  instance id of the caller
  ARGV[2]  lease in milliseconds

  Returns  1 renewed; 0 the lease is gone or held by another instance.
]]
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
return 0

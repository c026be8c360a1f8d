--[[
  Writes a value only if the writer's fence is not stale (FencedStore rule, see fence.ts).

  KEYS[1]  value key (string)
  KEYS[2]  fence key: hash {token, owner} of the last accepted write (same hash tag as KEYS[1])
  ARGV[1]  value
  ARGV[2]  fencing token of the writer
  ARGV[3]  owner id of the writer

  Returns  1 accepted; 0 rejected because a higher token, or the same token from another owner,
           was accepted before.
]]
local last = redis.call('hmget', KEYS[2], 'token', 'owner')
local lastToken = tonumber(last[1])
local token = tonumber(ARGV[2])
if lastToken and (token < lastToken or (token == lastToken and last[2] ~= ARGV[3])) then
  return 0
end
redis.call('set', KEYS[1], ARGV[1])
redis.call('hset', KEYS[2], 'token', ARGV[2], 'owner', ARGV[3])
return 1

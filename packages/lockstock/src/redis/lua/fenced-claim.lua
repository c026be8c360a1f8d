--[[
  Claims a key for a read-modify-write: records the caller's fence as the newest (FencedStore rule,
  see fence.ts) and returns the value, so that an older holder's later write is rejected.

  KEYS[1]  value key (string)
  KEYS[2]  fence key: hash {token, owner} of the newest claim or accepted write (same hash tag)
  ARGV[1]  fencing token of the caller
  ARGV[2]  owner id of the caller

  Returns  {1, value} granted (value nil if the key was never written); {0} a higher token, or the
           same token from another owner, claimed or wrote before (nothing changed).
]]
local last = redis.call('hmget', KEYS[2], 'token', 'owner')
local lastToken = tonumber(last[1])
local token = tonumber(ARGV[1])
if lastToken and (token < lastToken or (token == lastToken and last[2] ~= ARGV[2])) then
  return { 0 }
end
redis.call('hset', KEYS[2], 'token', ARGV[1], 'owner', ARGV[2])
return { 1, redis.call('get', KEYS[1]) }

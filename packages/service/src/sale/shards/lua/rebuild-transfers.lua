--[[
  A step of a part's rebuild (recovery/rebuild-part.ts): the transfers the part still owes (debited,
  not known to be credited) go back to its `transfers` hash with their units in `inflight`, the
  transfers it was credited go back to `credits` (so none is credited twice), and the version moves
  past anything it showed before (version.lua).

  KEYS[1]  recovering (must hold ARGV[1])
  KEYS[2]  transfers: hash {transfer id: "<to part>:<units>:<ms>"}
  KEYS[3]  credits: hash {transfer id: "credited"}
  KEYS[4]  inflight
  KEYS[5]  version
  ARGV[1]  token of this rebuild
  ARGV[2]  1: replace `transfers` and `inflight` (the first call); 0: only add credits
  ARGV[3]  units in flight (the pending transfers' units)
  ARGV[4]  n: pending transfers in this call
  ARGV[5 .. 4+2n]  pairs: transfer id, "<to part>:<units>:<ms>"
  ARGV[5+2n ..]  ids of transfers credited to the part

  Returns  1 written; 0 the token is not the flag's (nothing written)
]]
-- @include version.lua
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
local pending = tonumber(ARGV[4])
if ARGV[2] == '1' then
  redis.call('del', KEYS[2])
  for i = 5, 4 + 2 * pending, 2 do
    redis.call('hset', KEYS[2], ARGV[i], ARGV[i + 1])
  end
  if tonumber(ARGV[3]) > 0 then
    redis.call('set', KEYS[4], ARGV[3])
  else
    redis.call('del', KEYS[4])
  end
  bump_version(KEYS[5])
end
for i = 5 + 2 * pending, #ARGV do
  redis.call('hset', KEYS[3], ARGV[i], 'credited')
end
return 1

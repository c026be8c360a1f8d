--[[
  A step of a rebuild: the buyers hash, as the record and the unrecorded stream entries have it.

  KEYS[1]  recovering (must hold ARGV[1])
  KEYS[2]  buyers: hash {user id: units held}
  ARGV[1]  token of this rebuild
  ARGV[2]  1: delete the hash first (the first step); 0: add to it
  ARGV[3..] pairs: user id, units held (> 0)

  Returns  1 written; 0 the token is not the flag's (nothing written)
]]
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
if ARGV[2] == '1' then
  redis.call('del', KEYS[2])
end
for i = 3, #ARGV - 1, 2 do
  redis.call('hset', KEYS[2], ARGV[i], ARGV[i + 1])
end
return 1

--[[
  Lab exhibit (the usual split of a hot stock on a Cluster): take one unit from one stock segment,
  one per user — in this segment. The segment knows only its own buyers.

  KEYS[1]  a stock segment (integer)
  KEYS[2]  the segment's buyers (set)
  ARGV[1]  buyer

  Returns  the Redis time of the sale in ms (a unit taken); 0 the segment is empty; -1 the buyer
           bought in this segment already.
]]
if redis.call('sismember', KEYS[2], ARGV[1]) == 1 then
  return -1
end
if tonumber(redis.call('get', KEYS[1]) or '0') <= 0 then
  return 0
end
redis.call('decr', KEYS[1])
redis.call('sadd', KEYS[2], ARGV[1])
local time = redis.call('time')
return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

--[[
  Lab exhibit (seed 003 §5.2): take one unit from one stock segment.
  KEYS[1]  a stock segment (integer)
  Returns  1 taken; 0 the segment is empty.
]]
if tonumber(redis.call('get', KEYS[1]) or '0') <= 0 then
  return 0
end
redis.call('decr', KEYS[1])
return 1

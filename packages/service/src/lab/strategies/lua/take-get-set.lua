--[[
  Lab exhibit (seeds 003, 004): check and decrement the stock in one script.
  KEYS[1]  stock (integer)
  Returns  1 taken; 0 sold out.
]]
local stock = tonumber(redis.call('get', KEYS[1]))
if stock <= 0 then
  return 0
end
redis.call('set', KEYS[1], stock - 1)
return 1

--[[
  How many holders of a lease set are alive, and the longest remaining lease (read locks, semaphores).

  KEYS[1]  leases: zset {owner: lease end, ms on Redis's clock}

  Returns  {live holders, longest remaining lease in ms (0 when none)}. Changes nothing.
]]
local t = redis.call('time')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local live = redis.call('zcount', KEYS[1], '(' .. now, '+inf')
local last = redis.call('zrange', KEYS[1], -1, -1, 'WITHSCORES')[2]
local remaining = 0
if last and tonumber(last) > now then
  remaining = tonumber(last) - now
end
return { live, remaining }

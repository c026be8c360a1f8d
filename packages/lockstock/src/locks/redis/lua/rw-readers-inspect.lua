--[[
  How many readers of a read-write lock are alive, and the longest remaining read lease.

  KEYS[1]  readers: hash (see rw-readers.lua)

  Returns  {live readers, longest remaining lease in ms (0 when none)}. Changes nothing.
]]
-- @include rw-readers.lua
local now = now_ms()
local fields = redis.call('hgetall', KEYS[1])
local live, longest = 0, 0
for i = 1, #fields, 2 do
  if string.sub(fields[i], 1, 3) == LEASE then
    local left = tonumber(fields[i + 1]) - now
    if left > 0 then
      live = live + 1
      longest = math.max(longest, left)
    end
  end
end
return { live, longest }

--[[
  How many readers of a read-write lock are alive, and the longest remaining read lease.

  KEYS[1]  readers: hash (see rw-readers.lua)

  Returns  {live readers, longest remaining lease in ms (0 when none)}. Changes nothing.
]]
-- @include rw-readers.lua
local now = now_ms()
local values = redis.call('hvals', KEYS[1])
local live, longest = 0, 0
for _, value in ipairs(values) do
  local _, _, ends = parse_reader(value)
  if ends > now then
    live = live + 1
    longest = math.max(longest, ends - now)
  end
end
return { live, longest }

--[[
  Sets the count of a countdown latch unless it is counting down already.

  KEYS[1]  count: integer (absent: zero, released)
  ARGV[1]  count (>= 1)

  Returns  1 set; 0 the latch was already counting down (nothing changed).
]]
if redis.call('set', KEYS[1], ARGV[1], 'NX') then
  return 1
end
return 0

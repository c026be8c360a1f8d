--[[
  Resets the lease of a read hold (extend() and the watchdog).

  KEYS[1]  readers: hash (see rw-readers.lua)
  ARGV[1]  owner id
  ARGV[2]  new lease in milliseconds

  Returns  1 extended; -1 no read hold (its lease ended).
]]
-- @include rw-readers.lua
local lease = tonumber(ARGV[2])
local now = now_ms()
local count, token, _, record = read_hold(KEYS[1], ARGV[1], now)
if not count then
  return -1
end
redis.call('hset', KEYS[1], ARGV[1], reader_value(count, token, now + lease, record))
outlive(KEYS[1], lease)
return 1

--[[
  Resets the lease of a read hold (extend() and the watchdog).

  KEYS[1]  readers: hash (see rw-readers.lua)
  ARGV[1]  owner id
  ARGV[2]  new lease in milliseconds

  Returns  1 extended; -1 no read hold (its lease ended).
]]
-- @include rw-readers.lua
local now = now_ms()
if not read_lease_end(KEYS[1], ARGV[1], now) then
  return -1
end
redis.call('hset', KEYS[1], LEASE .. ARGV[1], now + tonumber(ARGV[2]))
outlive(KEYS[1], tonumber(ARGV[2]))
return 1

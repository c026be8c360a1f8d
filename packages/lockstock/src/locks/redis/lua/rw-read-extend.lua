--[[
  Resets the lease of a read hold (extend() and the watchdog).

  KEYS[1]  readers: hash (see rw-readers.lua)
  KEYS[2]  reader leases: zset
  ARGV[1]  owner id
  ARGV[2]  new lease in milliseconds

  Returns  1 extended; -1 no read hold (its lease ended).
]]
-- @include rw-readers.lua
local now = now_ms()
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 or redis.call('zscore', KEYS[2], ARGV[1]) == false then
  return -1
end
redis.call('zadd', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
expire_with_last_reader(KEYS[1], KEYS[2], tonumber(ARGV[2]))
return 1

--[[
  Stores a semaphore's permit count for every client (leased or counter semaphore), and wakes its
  waiters: with more permits some may get in now; clients made with another count learn it on their
  next acquire (an error reply, see semaphore-acquire.lua).

  KEYS[1]  permit count: integer, never expires
  KEYS[2]  wake-up shard channel (same hash tag)
  ARGV[1]  the new count (a positive integer)

  Returns  the count stored before (0 when none was).
]]
local before = tonumber(redis.call('get', KEYS[1]) or '0')
redis.call('set', KEYS[1], ARGV[1])
redis.call('spublish', KEYS[2], '')
return before

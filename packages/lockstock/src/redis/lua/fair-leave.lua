--[[
  A waiter of a fair lock gives up (timed out or aborted): it leaves the queue, and if it was the
  head of a free lock, the next waiter is woken in its place.

  KEYS[1]  lock key
  KEYS[2]  queue (see fair-queue.lua)
  KEYS[3]  waiter deadlines
  KEYS[4]  wake-up shard channel
  KEYS[5]  waiters: hash {owner: "<client id> <lease ms>[ <holder record>]"} (see fair-queue.lua)
  ARGV[1]  owner id of the waiter

  Returns  1 if it was queued, 0 if not.
]]
-- @include fair-queue.lua
local now = now_ms()
local was_head = fair_head(KEYS[2], KEYS[3], KEYS[5], now) == ARGV[1]
local queued = redis.call('zrem', KEYS[2], ARGV[1])
dequeue(KEYS[2], KEYS[3], KEYS[5], ARGV[1])
if was_head and redis.call('exists', KEYS[1]) == 0 then
  wake_head(KEYS[2], KEYS[3], KEYS[5], KEYS[4], now)
end
return queued

--[[
  Fragment (included with `-- @include fair-queue.lua`): the queue of a fair lock.

    queue      zset {owner: arrival time in µs}: every waiter of every client, oldest first
    deadlines  zset {owner: ms on Redis's clock}: a waiter that has not tried again by then is gone
    waiters    hash {owner: "<client id> <lease ms>[ <holder record>]"}: whose waiter it is, the lease
               it asked for, and the record it gave (JSON, if any) for the hold it will get

  Waiters refresh their deadline on every attempt and attempt at least every third of the waiter
  timeout, so only dead waiters pass their deadline. Deadlines are on Redis's clock: no client clock
  decides who is dead. Keys are passed in by the including script.
]]
local function now_ms()
  local t = redis.call('time')
  return t[1] * 1000 + math.floor(t[2] / 1000), t[1] * 1000000 + t[2]
end

local function dequeue(queue, deadlines, waiters, owner)
  redis.call('zrem', queue, owner)
  redis.call('zrem', deadlines, owner)
  redis.call('hdel', waiters, owner)
end

-- The first live waiter (dead ones ahead of it are dropped), or false if nobody waits.
local function fair_head(queue, deadlines, waiters, now)
  while true do
    local first = redis.call('zrange', queue, 0, 0)[1]
    if not first then
      return false
    end
    local deadline = redis.call('zscore', deadlines, first)
    if deadline and tonumber(deadline) > now then
      return first
    end
    dequeue(queue, deadlines, waiters, first)
  end
end

-- Wakes only the next waiter: the message names it.
local function wake_head(queue, deadlines, waiters, channel, now)
  local head = fair_head(queue, deadlines, waiters, now)
  if head then
    redis.call('spublish', channel, 'o:' .. head)
  end
end

--[[
  Fragment (included with `-- @include client-queue.lua`): the queue of clients that have waiters,
  and the marker of a client's turn (see client-turns.lua). What an acquire needs of the turns; a
  fragment of its own so an acquire does not define the release's functions on every call.
  All keys are passed in by the including script.
]]
local TURN = '\0turn:'

local function now_ms()
  local t = redis.call('time')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end

-- Remembers that `client` waits (keeps its place if it already has one). Its waiters try again at
-- the latest when the holder's lease ends, so the queue must outlive that lease.
local function enqueue(queue_key, client, lock_key)
  redis.call('zadd', queue_key, 'NX', now_ms(), client)
  local lease = redis.call('pttl', lock_key)
  if lease == -1 then
    redis.call('persist', queue_key)
  else
    redis.call('pexpire', queue_key, math.max(lease, 0) + 600000)
  end
end

--[[
  Fragment (included by lock scripts with `-- @include client-turns.lua`): fair turns between clients.

  Within a client, waiters queue in FIFO order and a release can hand the lock to the next local
  waiter (WaitQueues.claimHandOff). Between clients, order comes from Redis:
    queue  zset {client id: time of its first failed attempt, ms} — clients that have waiters;
    turn   string, the client id the free lock is reserved for, expiring after the turn window.
  A release that does not hand off locally gives the turn to the client waiting longest; for the
  turn window only that client may take the free lock (a dead client costs one window, then the lock
  is open to all). All keys are passed in by the including script.
]]
local function now_ms()
  local t = redis.call('time')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end

-- Remembers that `client` waits (keeps its place if it already has one).
local function enqueue(queue_key, client)
  redis.call('zadd', queue_key, 'NX', now_ms(), client)
  redis.call('pexpire', queue_key, 600000)
end

-- Gives the turn to the longest-waiting client other than the releasing one; returns its id, or ''.
local function pass_turn(queue_key, turn_key, releasing_client, turn_ms)
  redis.call('zrem', queue_key, releasing_client)
  local next_client = redis.call('zpopmin', queue_key)[1]
  if next_client then
    redis.call('set', turn_key, next_client, 'PX', turn_ms)
    return next_client
  end
  return ''
end

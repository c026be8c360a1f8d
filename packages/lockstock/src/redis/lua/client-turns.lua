--[[
  Fragment (included by lock scripts with `-- @include client-turns.lua`): fair turns between clients.

  Within a client, waiters queue in FIFO order and a release can hand the lock to the next local
  waiter (WaitQueues.claimHandOff). Between clients, order comes from Redis:
    queue  zset {client id: time of its first failed attempt, ms}: clients that have waiters.
  Every waiter's client is in the queue before the waiter sleeps, so a release notifies (publishes)
  only when another client waits. A release that does not hand off locally reserves the lock for the
  client waiting longest: the
  lock key keeps existing, holding a turn marker instead of an owner, for the turn window. Only that
  client may replace the marker with its owner; for everyone else the lock looks held for the rest of
  the window, so a dead client costs one window, then the lock is free for all. (A semaphore reserves
  one permit the same way: see semaphore-acquire.lua.)
  All keys are passed in by the including script.
]]
-- @include client-queue.lua

-- Removes and returns the longest-waiting client other than `releasing_client`, or nil.
local function next_client(queue_key, releasing_client)
  if redis.call('exists', queue_key) == 0 then
    return nil
  end
  redis.call('zrem', queue_key, releasing_client)
  return redis.call('zpopmin', queue_key)[1]
end

-- The end of every acquire: a taken lock issues the next fencing token and takes the client out of
-- the queue; a refused caller that will wait keeps its client queued. Returns the script's reply.
local function acquired_or_queued(taken, lock_key, fence_key, queue_key, client, waiting)
  if taken then
    if waiting == '1' then
      redis.call('zrem', queue_key, client)
    end
    return redis.call('incr', fence_key)
  end
  if waiting == '1' then
    enqueue(queue_key, client, lock_key)
  end
  return { redis.call('pttl', lock_key) }
end

-- Who gets a just-released lock (mode 'handoff' | 'yield' | 'notify', see mutex-release.lua).
-- Returns 'turn', id: another client's turn (the caller marks the lock for it, then calls
-- announce_turn); 'grant': hand it to the releasing client's waiter; 'free': nobody waits.
local function next_holder(queue_key, mode, releasing_client)
  if mode ~= 'handoff' then
    local turn = next_client(queue_key, releasing_client)
    if turn then
      return 'turn', turn
    end
  end
  if mode == 'notify' then
    return 'free'
  end
  return 'grant'
end

-- After marking the lock for `turn`: a yielding client queues behind the others; wake them. The
-- message names the client whose turn it is (`prefix` .. client: 't:' for a lock, whose other clients
-- then hold back for the turn window; 'p:' for one permit of several, after which the others only
-- re-check once the window is over, in case that client is gone).
local function announce_turn(queue_key, lock_key, channel, mode, releasing_client, turn, prefix)
  if mode == 'yield' then
    enqueue(queue_key, releasing_client, lock_key)
  end
  redis.call('spublish', channel, (prefix or 't:') .. turn)
end

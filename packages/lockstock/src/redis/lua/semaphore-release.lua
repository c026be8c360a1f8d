--[[
  Returns a permit (by its owner) and decides who gets it next, as mutex-release.lua does: a waiter
  of the releasing client in the script itself, or the turn of the client waiting longest (the permit
  is reserved for it and that client is woken by name), or nobody (no client waits: no message).
  KEYS[1]  permits: zset {owner: lease end; turn markers} (see semaphore-acquire.lua)
  KEYS[2]  fencing counter
  KEYS[3]  wake-up shard channel (same hash tag)
  KEYS[4]  waiting clients: zset (see client-turns.lua)
  KEYS[5]  the owner's holder record (see semaphore-acquire.lua): deleted; KEYS[1] again when the
           client keeps none (its holders never wrote one: nothing to delete)
  KEYS[6]  the local waiter's holder record, written on a hand-off with ARGV[7]; KEYS[1] again when
           the client keeps none or there is no local waiter
  ARGV[1]  owner id
  ARGV[2]  'handoff' | 'yield' | 'notify' (see mutex-release.lua)
  ARGV[3]  client id of the caller
  ARGV[4]  turn window in milliseconds
  ARGV[5]  owner id of the local waiter ('handoff' / 'yield'; absent with 'notify')
  ARGV[6]  lease of the local waiter in milliseconds ('handoff' / 'yield'; absent with 'notify')
  ARGV[7]  holder record of the local waiter ('handoff' / 'yield'; '' or absent: none)
  Publishes on KEYS[3] '' when it dropped lapsed permits (anyone may try), and 'p:<client id>' when
  it gives another client the turn: that client's waiter tries now; the others only once the turn
  window is over (the permit is free then if that client is gone), and do not hold back meanwhile
  as for a lock's 't:' (other permits may come free).
  Returns  {token} (one-element array): the permit was handed to ARGV[5] with this fencing token;
           0 released; -1 the owner had no permit (its lease ended).
]]
if KEYS[5] ~= KEYS[1] then
  redis.call('del', KEYS[5]) -- also when the lease ended: the record must not outlast the permit
end
if redis.call('zrem', KEYS[1], ARGV[1]) == 0 then
  return -1
end
-- No local waiter and no client waiting: done, before the turns' functions are even defined.
if ARGV[2] == 'notify' and redis.call('exists', KEYS[4]) == 0 then
  return 0
end
-- @include client-turns.lua
-- @include outlive.lua
local mode = ARGV[2]
local now -- Redis's clock, read only when needed (an uncontended release never does)
if mode ~= 'notify' then
  now = now_ms()
  -- Under contention permits pass from release to release without an acquire, so the release drops
  -- what has lapsed (a turn its client never took, a dead holder's lease) and, if that freed a
  -- permit, wakes every client's first waiter to take it.
  if redis.call('zremrangebyscore', KEYS[1], '-inf', now) > 0 then
    redis.call('spublish', KEYS[3], '')
  end
  if redis.call('zscore', KEYS[1], ARGV[5]) then
    mode = 'notify' -- the offered owner holds a permit already (one per owner): no hand-off
  end
end
local next_is, turn = next_holder(KEYS[4], mode, ARGV[3])
if next_is == 'turn' then
  redis.call('zadd', KEYS[1], (now or now_ms()) + tonumber(ARGV[4]), TURN .. turn)
  announce_turn(KEYS[4], KEYS[1], KEYS[3], mode, ARGV[3], turn, 'p:')
  return 0
end
if next_is == 'free' then
  return 0
end
local lease = tonumber(ARGV[6])
redis.call('zadd', KEYS[1], now + lease, ARGV[5])
outlive(KEYS[1], lease)
if ARGV[7] and ARGV[7] ~= '' and KEYS[6] ~= KEYS[1] then
  redis.call('set', KEYS[6], ARGV[7], 'PX', lease)
end
return { redis.call('incr', KEYS[2]) }

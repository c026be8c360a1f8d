--[[
  Takes a permit of a semaphore whose permits each have a lease (redis-semaphore's design, with
  fencing): a holder that dies loses its permit when its lease ends. Clients with waiters take turns
  as for the mutex (client-turns.lua): a permit a release reserved for a client's turn is a member
  '\0turn:<client id>' whose score is the end of the turn window, so it counts as taken for everyone
  else and lapses by itself if that client is gone.
  KEYS[1]  permits: zset {owner (permit id): lease end, ms on Redis's clock; turn markers}
  KEYS[2]  fencing counter: integer, the last token issued for this name (never expires)
  KEYS[3]  waiting clients: zset {client id: first failed attempt, ms} (client-turns.lua)
  KEYS[4]  permit count: integer, stored by the first acquire (or setPermits), never expires
  KEYS[5]  the owner's holder record: string (JSON) '<KEYS[1]>:holder:<owner>', with the permit's lease
           as its TTL (written only with a record in ARGV[6]; a client that keeps none passes KEYS[1]
           again)
  ARGV[1]  owner id (one permit per owner)
  ARGV[2]  lease in milliseconds
  ARGV[3]  permits: how many holders at once, as this client was configured
  ARGV[4]  client id of the caller
  ARGV[5]  1 if the caller will wait (keep its client queued on failure), else 0
  ARGV[6]  the caller's holder record, stored in KEYS[5] when it takes a permit ('' for none)
  Returns  the fencing token when a permit was taken: an integer while others are left, a string when
           this was the last (the caller's next local waiter need not try: a release will hand it
           one, or wake it);
           {retry ms} when all are taken: when the first lease or turn ends (-1 if the owner already
           holds a permit: it never gets a second one);
           an error reply 'LOCKSTOCK_PERMITS <stored>' when the count stored on Redis is another one
           (two services configured differently must not each admit their own number).
]]
local permits_key, configured_permits = KEYS[4], ARGV[3]
-- @include permits-check.lua
-- @include outlive.lua
local t = redis.call('time')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local owner, lease, permits = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
-- Ended leases and lapsed turns are dropped only when they could matter: while two or more permits
-- are left even counting them, this acquire takes one and is not the last, so they can wait (and the
-- common case saves a ZREMRANGEBYSCORE); the set never grows past `permits` entries for them.
local count = redis.call('zcard', KEYS[1])
if count >= permits - 1 then
  count = count - redis.call('zremrangebyscore', KEYS[1], '-inf', now)
end
-- Takes a free permit, or the one reserved for this client's turn (`turn`: its marker).
local function take(turn)
  -- NX: an owner that holds a permit already is not given a second one (nor a new lease).
  if redis.call('zadd', KEYS[1], 'NX', now + lease, owner) == 0 then
    if tonumber(redis.call('zscore', KEYS[1], owner)) > now then
      return { -1 }
    end
    -- The owner's own ended lease, not dropped yet (so already counted): a new lease on it.
    redis.call('zadd', KEYS[1], now + lease, owner)
    count = count - 1
  end
  if turn then
    redis.call('zrem', KEYS[1], turn)
  else
    count = count + 1
  end
  outlive(KEYS[1], lease)
  if ARGV[6] ~= '' then
    redis.call('set', KEYS[5], ARGV[6], 'PX', lease)
  end
  if ARGV[5] == '1' then
    redis.call('zrem', KEYS[3], ARGV[4])
  end
  local token = redis.call('incr', KEYS[2])
  if count < permits then
    return token
  end
  return tostring(token) -- the last one: as a string (an integer reply costs Redis less than an array)
end
if count < permits then
  return take(nil)
end
-- Every permit is taken or reserved. The turns are defined only here: an uncontended acquire does
-- not pay for their functions. (With a permit free the caller takes that one: a reservation is only
-- made while every permit is taken or reserved.)
-- @include client-queue.lua
local turn = TURN .. ARGV[4]
if redis.call('zscore', KEYS[1], turn) then
  return take(turn)
end
if redis.call('zscore', KEYS[1], owner) then
  return { -1 }
end
if ARGV[5] == '1' then
  enqueue(KEYS[3], ARGV[4], KEYS[1])
end
local first = redis.call('zrange', KEYS[1], 0, 0, 'WITHSCORES')[2]
return { math.max(tonumber(first) - now, 0) }

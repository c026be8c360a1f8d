--[[
  Takes or re-enters a fair lock: granted strictly in arrival order across all clients.

  KEYS[1]  lock key: hash {owner: hold count, '\0t': the holder's fencing token, '\0h': its holder
           record (JSON), when it gave one} (one owner at a time), the lease as its TTL
  KEYS[2]  queue: zset {owner: arrival time, µs} (see fair-queue.lua)
  KEYS[3]  waiter deadlines: zset {owner: ms on Redis's clock}
  KEYS[4]  fencing counter: integer, the last token issued for this name (never expires)
  KEYS[5]  waiters: hash {owner: "<client id> <lease ms>[ <holder record>]"} (see fair-queue.lua)
  ARGV[1]  owner id
  ARGV[2]  lease in milliseconds
  ARGV[3]  1 if the caller will wait (queue it if refused), else 0
  ARGV[4]  waiter timeout in milliseconds: a queued waiter that does not try again within it is dropped
  ARGV[5]  client id of the caller (a release by the same client may grant it the lock directly)
  ARGV[6]  the caller's holder record ('' for none): kept as '\0h' with a first hold (not changed on
           re-entry), and with a queued waiter's place, for a release that grants it the lock

  Returns  the fencing token when acquired (re-entry: the holder's own token, kept in the hash);
           {retry ms} when refused: try again by then at the latest (a third of the waiter timeout
           or less, so a live waiter keeps its place), or earlier when woken by name.
]]
local owner, lease, record = ARGV[1], tonumber(ARGV[2]), ARGV[6]
local waiter_timeout = tonumber(ARGV[4])
-- Uncontended: no holder and nobody queued, so no clock and no queue to consult. The record goes
-- into the same HSET: no command more with one, none at all without.
if redis.call('exists', KEYS[1], KEYS[2]) == 0 then
  local token = redis.call('incr', KEYS[4])
  if record == '' then
    redis.call('hset', KEYS[1], owner, 1, '\0t', token)
  else
    redis.call('hset', KEYS[1], owner, 1, '\0t', token, '\0h', record)
  end
  redis.call('pexpire', KEYS[1], lease)
  return token
end
if redis.call('hexists', KEYS[1], owner) == 1 then
  redis.call('hincrby', KEYS[1], owner, 1)
  -- Re-entry never shortens the lease the outer hold is relying on.
  local ttl = redis.call('pttl', KEYS[1])
  if ttl >= 0 and ttl < lease then
    redis.call('pexpire', KEYS[1], lease)
  end
  return tonumber(redis.call('hget', KEYS[1], '\0t') or '0')
end
-- Defined only past the common cases (Lua makes a closure per local function on every call).
-- @include fair-queue.lua
local now, now_us = now_ms()
local head = fair_head(KEYS[2], KEYS[3], KEYS[5], now)
local held = redis.call('exists', KEYS[1]) == 1
if not held and (not head or head == owner) then
  local token = redis.call('incr', KEYS[4])
  if record == '' then
    redis.call('hset', KEYS[1], owner, 1, '\0t', token)
  else
    redis.call('hset', KEYS[1], owner, 1, '\0t', token, '\0h', record)
  end
  redis.call('pexpire', KEYS[1], lease)
  if head then
    dequeue(KEYS[2], KEYS[3], KEYS[5], owner)
  end
  return token
end
local retry = math.floor(waiter_timeout / 3)
if ARGV[3] == '1' then
  redis.call('zadd', KEYS[2], 'NX', now_us, owner)
  redis.call('zadd', KEYS[3], now + waiter_timeout, owner)
  local waiter = ARGV[5] .. ' ' .. ARGV[2]
  if record ~= '' then
    waiter = waiter .. ' ' .. record -- refreshed with every attempt, so it is this waiter's latest
  end
  redis.call('hset', KEYS[5], owner, waiter)
  -- The queue outlives its waiters only briefly: each attempt pushes this back.
  redis.call('pexpire', KEYS[2], waiter_timeout * 2)
  redis.call('pexpire', KEYS[3], waiter_timeout * 2)
  redis.call('pexpire', KEYS[5], waiter_timeout * 2)
  head = head or owner
end
if held then
  local ttl = redis.call('pttl', KEYS[1])
  if ttl >= 0 and ttl < retry then
    retry = ttl
  end
elseif head ~= owner then
  -- Free but reserved for the head, which was woken. If it is gone, its deadline opens the way.
  local deadline = tonumber(redis.call('zscore', KEYS[3], head) or now)
  retry = math.max(0, math.min(retry, deadline - now))
end
return { retry }

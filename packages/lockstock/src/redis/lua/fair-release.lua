--[[
  Releases one hold of a fair lock; the last hold gives the lock to the next waiter in line: directly
  when that waiter belongs to the releasing client (no message, no second round trip), else by
  waking only it, by name.

  KEYS[1]  lock key (hash {owner: hold count, '\0t': token, '\0h': holder record}): deleted with
           the last hold, holder record and all
  KEYS[2]  queue (see fair-queue.lua)
  KEYS[3]  waiter deadlines
  KEYS[4]  wake-up shard channel (same hash tag as the lock)
  KEYS[5]  waiters: hash {owner: "<client id> <lease ms>[ <holder record>]"}: a waiter granted the
           lock here takes its record (if it gave one) with it
  KEYS[6]  fencing counter
  ARGV[1]  owner id
  ARGV[2]  client id of the caller

  Publishes 'o:<owner>' on KEYS[4], naming the next live waiter, when it belongs to another client.
  Returns  {token, owner} (two-element array): the lock was handed to `owner`, a waiter of this client;
           n > 0 holds this owner still has; 0 released; -1 no lock; -2 held by another owner.
]]
-- @include hold-count.lua
local left = release_one_hold(KEYS[1], ARGV[1])
if left then
  return left
end
redis.call('del', KEYS[1])
if redis.call('exists', KEYS[2]) == 0 then
  return 0
end
-- Defined only past the common case (Lua makes a closure per local function on every call).
-- @include fair-queue.lua
local head = fair_head(KEYS[2], KEYS[3], KEYS[5], now_ms())
if not head then
  return 0
end
local waiter = redis.call('hget', KEYS[5], head) or ''
local client, lease, record = string.match(waiter, '^(%S+) (%d+) ?(.*)$')
if client == ARGV[2] then
  local token = redis.call('incr', KEYS[6])
  if record == '' then
    redis.call('hset', KEYS[1], head, 1, '\0t', token)
  else
    redis.call('hset', KEYS[1], head, 1, '\0t', token, '\0h', record)
  end
  redis.call('pexpire', KEYS[1], lease)
  dequeue(KEYS[2], KEYS[3], KEYS[5], head)
  return { token, head }
end
redis.call('spublish', KEYS[4], 'o:' .. head)
return 0

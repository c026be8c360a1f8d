--[[
  Takes or re-enters the read side of a read-write lock. Writers are preferred: while a writer waits
  (the intent key exists), new readers are refused, so a stream of readers cannot starve writers.

  KEYS[1]  writer: hash {owner: hold count, '\0t': token}, the write lease as its TTL
  KEYS[2]  readers: hash (see rw-readers.lua)
  KEYS[3]  write intent: string, the waiting writer's owner id, with a short TTL it keeps refreshing
  KEYS[4]  fencing counter: integer, the last token issued for this name (never expires)
  ARGV[1]  owner id
  ARGV[2]  lease in milliseconds

  Returns  the fencing token when acquired (re-entry: this owner's token). The write holder itself may
           take the read lock (downgrade: release the write lock afterwards).
           {retry ms} when refused: the writer's remaining lease, or the intent's.
]]
-- @include rw-readers.lua
local owner, lease = ARGV[1], tonumber(ARGV[2])
local now = now_ms()
-- Re-entry keeps the hold's token and never shortens the lease the outer hold relies on.
local function reenter(count, token, ends)
  redis.call('hset', KEYS[2], owner, reader_value(count + 1, token, math.max(ends, now + lease)))
  outlive(KEYS[2], lease)
  return token
end
-- The common case: no writer holds the lock or waits for it (one EXISTS), and the owner is a new
-- reader: one HSETNX takes its field. A token is issued first; if the owner turns out to hold the
-- lock already, that token is skipped (tokens only need to increase).
if redis.call('exists', KEYS[1], KEYS[3]) == 0 then
  local token = redis.call('incr', KEYS[4])
  if redis.call('hsetnx', KEYS[2], owner, reader_value(1, token, now + lease)) == 0 then
    local count, held, ends = read_hold(KEYS[2], owner, now)
    if count then
      return reenter(count, held, ends)
    end
    -- Its lease had ended: it starts over (count 1, the new token and lease).
    redis.call('hset', KEYS[2], owner, reader_value(1, token, now + lease))
  end
  outlive(KEYS[2], lease)
  return token
end
-- A writer holds the lock or waits for it: only a reader re-entering, or the writer itself
-- (downgrade), gets in.
local count, token, ends = read_hold(KEYS[2], owner, now)
if count then
  return reenter(count, token, ends)
end
if redis.call('hexists', KEYS[1], owner) == 0 then
  local writer = redis.call('pttl', KEYS[1])
  if writer ~= -2 then
    return { math.max(writer, 0) }
  end
  local intent = redis.call('pttl', KEYS[3])
  if intent > 0 then
    return { intent }
  end
end
-- A reader whose lease ended and who comes back starts over: count 1, a new token and lease.
token = redis.call('incr', KEYS[4])
redis.call('hset', KEYS[2], owner, reader_value(1, token, now + lease))
outlive(KEYS[2], lease)
return token

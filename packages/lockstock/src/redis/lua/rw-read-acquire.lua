--[[
  Takes or re-enters the read side of a read-write lock. Writers are preferred: while a writer waits
  (the intent key exists), new readers are refused, so a stream of readers cannot starve writers.

  KEYS[1]  writer: hash {owner: hold count, '\0t': token}, the write lease as its TTL
  KEYS[2]  readers: hash (see rw-readers.lua)
  KEYS[3]  write intent: string, the waiting writer's owner id, with a short TTL it keeps refreshing
  KEYS[4]  fencing counter: integer, the last token issued for this name (never expires)
  ARGV[1]  owner id
  ARGV[2]  lease in milliseconds
  ARGV[3]  the caller's holder record ('' for none): kept in the reader's field with a first hold (see
           rw-readers.lua), not changed on re-entry

  Returns  the fencing token when acquired (re-entry: this owner's token). The write holder itself may
           take the read lock (downgrade: release the write lock afterwards).
           {retry ms} when refused: the writer's remaining lease, or the intent's.
]]
local owner, lease = ARGV[1], tonumber(ARGV[2])
-- The record as the field stores it: after the numbers, one space ahead of it ('' for none).
local record = ''
if ARGV[3] ~= '' then
  record = ' ' .. ARGV[3]
end
-- The common case first, before the fragment's functions are defined (Lua makes a closure per local
-- function on every call): no writer holds the lock or waits for it (one EXISTS), and the owner is a
-- new reader: one HSETNX takes its field (value as in rw-readers.lua). A token is issued first; if the
-- owner turns out to hold the lock already, that token is skipped (tokens only need to increase).
local free = redis.call('exists', KEYS[1], KEYS[3]) == 0
local t = redis.call('time')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local token
if free then
  token = redis.call('incr', KEYS[4])
  if redis.call('hsetnx', KEYS[2], owner, string.format('%d %d %d', 1, token, now + lease) .. record) == 1 then
    if redis.call('pexpire', KEYS[2], lease, 'NX') == 0 then
      redis.call('pexpire', KEYS[2], lease, 'GT') -- as outlive() does
    end
    return token
  end
end
-- @include rw-readers.lua
-- Re-entry keeps the hold's token and record, and never shortens the lease the outer hold relies on.
local function reenter(count, held, ends, kept)
  redis.call('hset', KEYS[2], owner, reader_value(count + 1, held, math.max(ends, now + lease), kept))
  outlive(KEYS[2], lease)
  return held
end
if free then
  -- The field was there: this owner re-enters, or its lease had ended and it starts over (count 1,
  -- the token just issued, a new lease).
  local count, held, ends, kept = read_hold(KEYS[2], owner, now)
  if count then
    return reenter(count, held, ends, kept)
  end
  redis.call('hset', KEYS[2], owner, reader_value(1, token, now + lease, record))
  outlive(KEYS[2], lease)
  return token
end
-- A writer holds the lock or waits for it: only a reader re-entering, or the writer itself
-- (downgrade), gets in.
local count, held, ends, kept = read_hold(KEYS[2], owner, now)
if count then
  return reenter(count, held, ends, kept)
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
redis.call('hset', KEYS[2], owner, reader_value(1, token, now + lease, record))
outlive(KEYS[2], lease)
return token

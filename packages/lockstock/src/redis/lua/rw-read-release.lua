--[[
  Releases one read hold; when the last reader leaves, a waiting writer is woken.

  KEYS[1]  readers: hash (see rw-readers.lua): the owner's field goes with its last hold, its holder
           record with it
  KEYS[2]  wake-up shard channel (same hash tag as the lock)
  KEYS[3]  write intent: exists while a writer waits (see rw-write-acquire.lua)
  ARGV[1]  owner id
  ARGV[2]  '1' when the client knows the hold's lease has not ended (its validity deadline, which
           allows for drift, is ahead): the clock is not read. Else the field's lease end is checked
           against Redis's TIME. (Either way a field still there means no writer came in: a writer
           drops the fields of ended leases before it takes the lock.)

  Publishes '' on KEYS[2] when no reader is left and a writer waits. Only writers wait for readers,
  and a waiting writer keeps its intent alive (or tries again within the intent's lifetime anyway);
  a dead reader's field keeps the hash until a writer drops it, and that writer tries again when the
  dead lease ends.
  Returns  n > 0 holds this owner still has; 0 released; -1 no read hold (its lease ended: a field
           left behind is dropped).
]]
-- No functions of rw-readers.lua here: Lua would make a closure per local function on every call.
-- The field's value is '<hold count> <fencing token> <lease end>[ <record>]' (rw-readers.lua).
local value = redis.call('hget', KEYS[1], ARGV[1])
if not value then
  return -1
end
local count, token, ends, record = string.match(value, '^(%d+) (%d+) (%d+)(.*)$')
count = tonumber(count)
local lapsed = false -- its lease ended, but no writer has dropped its field yet
if ARGV[2] ~= '1' then
  local t = redis.call('time')
  lapsed = tonumber(ends) <= t[1] * 1000 + math.floor(t[2] / 1000)
end
if count > 1 and not lapsed then
  redis.call('hset', KEYS[1], ARGV[1], string.format('%d %s %s', count - 1, token, ends) .. record)
  return count - 1
end
redis.call('hdel', KEYS[1], ARGV[1])
-- One EXISTS when nothing is left and no writer waits; a second only when one of the two is there.
if redis.call('exists', KEYS[1], KEYS[3]) == 1 and redis.call('exists', KEYS[1]) == 0 then
  redis.call('spublish', KEYS[2], '')
end
if lapsed then
  return -1
end
return 0

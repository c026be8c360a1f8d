--[[
  Fragment (included with `-- @include rw-readers.lua`): the readers of a read-write lock, in one hash.

    readers  hash {owner: '<hold count> <fencing token> <lease end, ms on Redis's clock>[ <record>]'}
             expiring no earlier than the longest live lease; <record> is the reader's holder record
             (JSON), when its acquire gave one

  A reader's record is part of its own field: it lives, and goes, with that reader's hold (released,
  or dropped by a writer once its lease ended), costs no command of its own, and can never be read
  as another reader's.

  Each reader has its own lease, so a reader that dies stops counting when its lease ends without
  touching the others. A reader's acquire and release touch its own field only (one field, so one
  write each); when the last field goes, Redis deletes the empty hash. Only writers need to know who
  is still alive: they read the whole hash and drop the fields of dead readers. Keys are passed in by
  the including script.
]]
-- @include outlive.lua

local function now_ms()
  local t = redis.call('time')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end

-- A reader's field value: hold count, fencing token, lease end (numbers), and the record as stored
-- (' <record>', or '' when none).
local function parse_reader(value)
  local count, token, ends, record = string.match(value, '^(%d+) (%d+) (%d+)(.*)$')
  return tonumber(count), tonumber(token), tonumber(ends), record
end

-- `record` as parse_reader returns it (' <record>' or ''), kept as it is.
local function reader_value(count, token, ends, record)
  return string.format('%d %d %d', count, token, ends) .. record -- never exponent notation
end

-- `owner`'s read hold as (count, token, lease end, record) if its lease has not ended; else nil.
local function read_hold(readers, owner, now)
  local value = redis.call('hget', readers, owner)
  if not value then
    return nil
  end
  local count, token, ends, record = parse_reader(value)
  if ends <= now then
    return nil
  end
  return count, token, ends, record
end

-- Counts the readers whose lease has not ended and drops the fields of those whose lease has.
-- Returns the live count and the earliest end of a live lease (nil when none).
local function live_readers(readers, now)
  local fields = redis.call('hgetall', readers)
  local live, earliest, dead = 0, nil, {}
  for i = 1, #fields, 2 do
    local _, _, ends = parse_reader(fields[i + 1])
    if ends > now then
      live = live + 1
      if not earliest or ends < earliest then
        earliest = ends
      end
    else
      dead[#dead + 1] = fields[i]
    end
  end
  for i = 1, #dead, 1000 do
    redis.call('hdel', readers, unpack(dead, i, math.min(i + 999, #dead)))
  end
  return live, earliest
end

--[[
  Fragment (included with `-- @include rw-readers.lua`): the readers of a read-write lock, in one hash.

    readers  hash {owner: hold count, '\0t:' .. owner: its fencing token,
                   '\0l:' .. owner: when its lease ends, ms on Redis's clock}
             expiring no earlier than the longest live lease

  Each reader has its own lease, so a reader that dies stops counting when its lease ends without
  touching the others. Only writers need to know who is still alive: they read the whole hash and drop
  the dead readers' fields (a reader's own acquire and release touch its fields only, and when the
  last field goes, Redis deletes the empty hash). Keys are passed in by the including script.
]]
local TOKEN = '\0t:'
local LEASE = '\0l:'

local function now_ms()
  local t = redis.call('time')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end

-- When `owner`'s read lease ends, if it holds one that has not ended yet; else nil.
local function read_lease_end(readers, owner, now)
  local ends = tonumber(redis.call('hget', readers, LEASE .. owner) or '0')
  if ends > now then
    return ends
  end
  return nil
end

-- The hash lives at least `lease` ms more (a longer-lived hash, for another reader, is left alone).
local function outlive(readers, lease)
  if redis.call('pttl', readers) < lease then
    redis.call('pexpire', readers, lease)
  end
end

-- Counts the readers whose lease has not ended and drops the fields of those whose lease has.
-- Returns the live count and the earliest end of a live lease (nil when none).
local function live_readers(readers, now)
  local fields = redis.call('hgetall', readers)
  local live, earliest, dead = 0, nil, {}
  for i = 1, #fields, 2 do
    local field = fields[i]
    if string.sub(field, 1, 3) == LEASE then
      local ends = tonumber(fields[i + 1])
      if ends > now then
        live = live + 1
        if not earliest or ends < earliest then
          earliest = ends
        end
      else
        local owner = string.sub(field, 4)
        dead[#dead + 1] = owner
        dead[#dead + 1] = TOKEN .. owner
        dead[#dead + 1] = field
      end
    end
  end
  for i = 1, #dead, 300 do
    redis.call('hdel', readers, unpack(dead, i, math.min(i + 299, #dead)))
  end
  return live, earliest
end

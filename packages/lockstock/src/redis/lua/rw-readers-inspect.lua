--[[
  Reads the readers of a read-write lock for inspect(): how many are alive, the longest remaining
  read lease, and each live reader with its holder record, in one step.

  KEYS[1]  readers: hash (see rw-readers.lua)

  Returns  {live readers, longest remaining lease in ms (0 when none), owner, record or false, owner,
           record or false, ...}: one pair per live reader (record: what its acquire stored, JSON).
           Readers whose lease ended (fields no writer has dropped yet) are left out. Changes nothing.
]]
-- @include rw-readers.lua
local now = now_ms()
local fields = redis.call('hgetall', KEYS[1])
local reply = { 0, 0 }
for i = 1, #fields, 2 do
  local _, _, ends, record = parse_reader(fields[i + 1])
  if ends > now then
    reply[1] = reply[1] + 1
    reply[2] = math.max(reply[2], ends - now)
    reply[#reply + 1] = fields[i]
    reply[#reply + 1] = record ~= '' and string.sub(record, 2) or false
  end
end
return reply

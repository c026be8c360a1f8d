--[[
  How many read holds an owner has on a read-write lock: its field's count while its lease lasts.

  KEYS[1]  readers: hash (see rw-readers.lua)
  ARGV[1]  owner id

  Returns  the owner's hold count; 0 when it has no field, or its lease ended (the field may still be
           there while another reader keeps the hash alive: only writers drop dead readers' fields).
]]
-- @include rw-readers.lua
local count = read_hold(KEYS[1], ARGV[1], now_ms())
return count or 0

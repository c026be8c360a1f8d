--[[
  Step 3 of a transfer, once the receiver answered "credited": the donor forgets the pending
  transfer and its units leave `inflight`. A second call finds nothing and does nothing.

  KEYS[1]  inflight of the donor part
  KEYS[2]  transfers: hash {transfer id: "<to part>:<units>:<ms>"} of pending outgoing transfers
  KEYS[3]  version of the donor part
  KEYS[4]  recovering: exists while the donor part is being rebuilt from the record
  ARGV[1]  transfer id

  Returns  1 finished now; 0 nothing pending under that id; -8 the part is being recovered (the
           rebuild restores the pending transfer; finish it afterwards).
]]
if redis.call('exists', KEYS[4]) == 1 then
  return -8
end
local pending = redis.call('hget', KEYS[2], ARGV[1])
if not pending then
  return 0
end
local units = tonumber(string.match(pending, '^%d+:(%d+):'))
redis.call('hdel', KEYS[2], ARGV[1])
if redis.call('decrby', KEYS[1], units) <= 0 then
  redis.call('del', KEYS[1])
end
redis.call('incr', KEYS[3])
return 1

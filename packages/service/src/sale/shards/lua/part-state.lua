--[[
  part-state.lua for one part of a split sale (sale/shards/transfers.ts, `collect`): what the sold-out
  proof reads of the part, and the Redis time it read it at, in one atomic step. The proof's verdict
  is then placed on the Redis clock (between the last part's first read and the first part's second
  read), not at the moment its answer reaches a client.

  KEYS[1]  stock of the part
  KEYS[2]  inflight: units the part debited for transfers not finished
  KEYS[3]  version of the part
  KEYS[4]  recovering: exists while the part is being rebuilt from the record

  Returns  {stock or false, inflight or false, version or false, 1 if recovering else 0,
            Redis time in microseconds, as a string}
]]
local time = redis.call('time')
return {
  redis.call('get', KEYS[1]),
  redis.call('get', KEYS[2]),
  redis.call('get', KEYS[3]),
  redis.call('exists', KEYS[4]),
  time[1] .. string.format('%06d', tonumber(time[2])),
}

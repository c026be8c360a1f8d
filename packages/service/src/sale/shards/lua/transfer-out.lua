--[[
  Step 1 of a transfer between two parts of a split sale (sale/shards/transfers.ts): the donor gives
  units. They leave its stock for its `inflight` count, the transfer is recorded as pending in the
  donor's `transfers` hash — whoever finds it there finishes it (credit, then transfer-done.lua) — and
  `transfer-out` is appended to the donor's stream, for the record. The donor gives what was asked
  for, and at least half of what it has (rounded up), so a part that runs dry while buyers keep
  coming takes few transfers.

  KEYS[1]  stock of the donor part
  KEYS[2]  inflight: units the donor debited for transfers not finished
  KEYS[3]  transfers: hash {transfer id: "<to part>:<units>:<ms>"} of pending outgoing transfers
  KEYS[4]  version of the donor part
  KEYS[5]  the donor part's orders stream
  KEYS[6]  recovering: exists while the donor part is being rebuilt from the record
  ARGV[1]  transfer id (fresh: a snowflake id, never used for another debit)
  ARGV[2]  receiving part
  ARGV[3]  units wanted (integer >= 1)

  Returns  units debited (>= 1); 0 the donor has none; -1 no such part; -8 the part is being
           recovered; -9 the id was used already (nothing done).
]]
if redis.call('exists', KEYS[6]) == 1 then
  return -8
end
local stock = tonumber(redis.call('get', KEYS[1]) or '-1')
if stock < 0 then
  return -1
end
if stock == 0 then
  return 0
end
if redis.call('hexists', KEYS[3], ARGV[1]) == 1 then
  return -9
end
local units = math.max(math.min(tonumber(ARGV[3]), stock), math.ceil(stock / 2))
local time = redis.call('time')
local now_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('decrby', KEYS[1], units)
redis.call('incrby', KEYS[2], units)
redis.call('hset', KEYS[3], ARGV[1], ARGV[2] .. ':' .. units .. ':' .. string.format('%d', now_ms))
redis.call('incr', KEYS[4])
redis.call('xadd', KEYS[5], '*', 'event', 'transfer-out', 'transfer', ARGV[1], 'part', ARGV[2], 'qty', units)
return units

--[[
  Step 2 of a transfer: the receiving part takes the units, once. `credits` is the arbiter: the
  first credit of a transfer id adds the units and appends `transfer-in` to the receiver's stream;
  any later one (a retry, a second process finishing a crashed transfer) answers `credited` and does
  nothing. A rebuild of the part restores `credits` from the record, so a credit that was recorded is
  never made again.

  KEYS[1]  stock of the receiving part
  KEYS[2]  credits: hash {transfer id: "credited"}
  KEYS[3]  version of the receiving part
  KEYS[4]  the receiving part's orders stream
  KEYS[5]  recovering: exists while the receiving part is being rebuilt from the record
  ARGV[1]  transfer id
  ARGV[2]  donor part
  ARGV[3]  units

  Returns  "credited" (now or before); "recovering" (nothing done: try again after the rebuild);
           "missing" (no such part in Redis: it is rebuilt from the record first).
]]
if redis.call('hexists', KEYS[2], ARGV[1]) == 1 then
  return 'credited'
end
if redis.call('exists', KEYS[5]) == 1 then
  return 'recovering'
end
if redis.call('exists', KEYS[1]) == 0 then
  return 'missing'
end
redis.call('hset', KEYS[2], ARGV[1], 'credited')
redis.call('incrby', KEYS[1], ARGV[3])
redis.call('incr', KEYS[3])
redis.call('xadd', KEYS[4], '*', 'event', 'transfer-in', 'transfer', ARGV[1], 'part', ARGV[2], 'qty', ARGV[3])
return 'credited'

--[[
  One raffle entry: at most one per buyer (a repeated entry changes nothing and says so), only while
  the entry window is open (Redis's clock), never while the sale is being rebuilt from the record.
  The entry goes into the sale's entries stream, from which raffle/entries.ts records it.

  KEYS[1]  raffle window: hash {opens, closes}, ms since epoch (Redis clock)
  KEYS[2]  entrants: hash {user id: entry hash}
  KEYS[3]  entries stream
  KEYS[4]  recovering: exists while the sale is being rebuilt from the record
  ARGV[1]  user id
  ARGV[2]  entry hash (hex SHA-256 of "<sale id>:<user id>")

  Returns  1 entered now; 0 entered before (nothing written); -1 Redis has no window for this raffle
           (not loaded, or lost: the caller loads it from the record); -2 entries not open yet;
           -3 entries closed; -8 the sale is being recovered.
]]
if redis.call('exists', KEYS[4]) == 1 then
  return -8
end
local window = redis.call('hmget', KEYS[1], 'opens', 'closes')
if not window[1] or not window[2] then
  return -1
end
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if now < tonumber(window[1]) then
  return -2
end
-- A buyer asking again after the close still hears that they are in.
if redis.call('hexists', KEYS[2], ARGV[1]) == 1 then
  return 0
end
if now >= tonumber(window[2]) then
  return -3
end
redis.call('hset', KEYS[2], ARGV[1], ARGV[2])
redis.call('xadd', KEYS[3], '*', 'user', ARGV[1], 'hash', ARGV[2])
return 1

--[[
  A buyer told "sold out" joins the sale's waitlist (one place per buyer: joining again keeps it).
  Units that come back later are offered to the line in join order (give-back.lua). The place comes
  from the record (waitlist.ts records the join first, sql/record-join.sql): asked without one, the
  script checks everything and answers -20 when the buyer may join, so that a refused buyer is never
  recorded as waiting and a buyer already in line costs no write to the record.

  KEYS[1]  not-before: exists until the sale starts
  KEYS[2]  open: the per-user limit; exists until the sale ends
  KEYS[3]  stock: units left
  KEYS[4]  recovering: exists while the sale is being rebuilt from the record
  KEYS[5]  buyers: hash {user id: units held}
  KEYS[6]  waitlist: sorted set {buyer: recorded place}
  KEYS[7]  offers: sorted set {buyer: when the offer ends, ms}
  ARGV[1]  user id
  ARGV[2]  the recorded place (seq), or '' to ask whether the buyer may join

  Returns  {1, place in line (1: next), buyers in line} waiting; {2, ms left, when the offer ends (ms
           since epoch, Redis clock)} the buyer holds an offer already (buy it); -1 no such sale;
           -2 not started (a raffle sale, too: its not-before is its end); -3 ended; -5 the buyer is
           at the per-user limit; -8 the sale is being recovered; -13 units are on sale (buy one
           instead); -20 the buyer may join: record the join and ask again with its place.
]]
local sale = redis.call('mget', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
if sale[4] then return -8 end
if sale[1] then return -2 end
if not sale[3] then return -1 end
if not sale[2] then return -3 end
local offer = redis.call('zscore', KEYS[7], ARGV[1])
if offer then
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if tonumber(offer) > now then
    return { 2, tonumber(offer) - now, tonumber(offer) }
  end
end
if not redis.call('zscore', KEYS[6], ARGV[1]) then
  if tonumber(sale[3]) > 0 then return -13 end
  if tonumber(redis.call('hget', KEYS[5], ARGV[1]) or '0') >= tonumber(sale[2]) then return -5 end
  if ARGV[2] == '' then return -20 end
  redis.call('zadd', KEYS[6], ARGV[2], ARGV[1])
end
return { 1, redis.call('zrank', KEYS[6], ARGV[1]) + 1, redis.call('zcard', KEYS[6]) }

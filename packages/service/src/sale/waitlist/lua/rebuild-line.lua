--[[
  A step of a sale's rebuild from the record (recovery/rebuild.ts), while its flag stands (nothing
  buys, settles, expires or joins then): the waitlist goes back into Redis as the record has it
  (sql/recorded-line.sql), in chunks, leaving out buyers who still hold an offer (rebuild-offers.lua
  kept those); with the last chunk, the units the record leaves unsold and unoffered are handed to the
  line's head as fresh offers (give-back.lua), the rest to the stock. A line lost with the sale thus
  never turns into units sold to whoever asks first.

  KEYS[1]  recovering (must hold ARGV[1])
  KEYS[2]  stock (finish.lua sets it to this step's answer afterwards)
  KEYS[3]  buyers: hash {user id: units held} (rebuilt already)
  KEYS[4]  waitlist: sorted set {buyer: recorded place}
  KEYS[5]  offers: sorted set {buyer: when the offer ends, ms}
  ARGV[1]  token of this rebuild
  ARGV[2]  1: the first chunk (the line Redis had is dropped first); 0: a later one
  ARGV[3]  -1: more chunks follow; else the units to hand out now (the last chunk)
  ARGV[4]  the sale's per-user limit
  ARGV[5]  how long an offer holds its unit, ms
  ARGV[6..] pairs: recorded place, user id (in line order)

  Returns  the units that went to the stock (0 before the last chunk); -1 the token is not the flag's
           (nothing written)
]]
-- @include give-back.lua
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return -1
end
if ARGV[2] == '1' then
  redis.call('del', KEYS[4])
end
for i = 6, #ARGV, 2 do
  if not redis.call('zscore', KEYS[5], ARGV[i + 1]) then
    redis.call('zadd', KEYS[4], ARGV[i], ARGV[i + 1])
  end
end
local units = tonumber(ARGV[3])
if units < 0 then
  return 0
end
local t = redis.call('time')
local wl = {
  buyers = KEYS[3], waitlist = KEYS[4], offers = KEYS[5], limit = tonumber(ARGV[4]),
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), offer_ms = tonumber(ARGV[5]),
}
return give_back(KEYS[2], wl, units)

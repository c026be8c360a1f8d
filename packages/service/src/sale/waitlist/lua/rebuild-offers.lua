--[[
  A step of a sale's rebuild from the record (recovery/rebuild.ts), while its flag stands (nothing
  buys, settles, expires or passes an offer on): the offers Redis still holds are kept, as many as the
  units the record leaves for them; the rest (the most recent offers first) are dropped. A Redis that
  came back older than it was may hold an offer that was bought since: its unit is in the record's
  orders too, and keeping it would let it be sold twice. The rebuild puts what is left in the stock.

  KEYS[1]  recovering (must hold ARGV[1])
  KEYS[2]  offers: sorted set {buyer: when the offer ends, ms}
  ARGV[1]  token of this rebuild
  ARGV[2]  units the record leaves unsold (stock - orders' units - unrecorded entries' units)

  Returns  the offers kept (each holds one unit); -1 the token is not the flag's (nothing written)
]]
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return -1
end
local held = redis.call('zcard', KEYS[2])
local room = math.max(0, tonumber(ARGV[2]))
if held > room then
  redis.call('zpopmax', KEYS[2], held - room)
  held = room
end
return held

--[[
  Puts a raffle's cursor back (after the draw, or when Redis lost it): the place after the last
  entrant served, as the caller computed it from the orders stream and the record. Only if there is
  none: while there is no cursor nothing is served (promote.lua refuses), so what the caller read
  cannot have moved; a cursor that exists was set from the same truth, or has moved on from it.

  KEYS[1]  cursor
  KEYS[2]  recovering: exists while the sale is being rebuilt from the record
  ARGV[1]  the place of the next entrant to serve

  Returns  1 set; 0 there was one (unchanged); -8 the sale is being recovered (nothing written).
]]
if redis.call('exists', KEYS[2]) == 1 then
  return -8
end
if redis.call('set', KEYS[1], ARGV[1], 'NX') then
  return 1
end
return 0

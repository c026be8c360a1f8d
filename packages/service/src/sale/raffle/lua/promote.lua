--[[
  Serves the draw order: gives one unit each to the next entrants, from the cursor on, while units
  are left — at the draw (the first `stock` entrants win) and whenever units come back (a winner
  cancelled or did not pay: the waitlist). Each winner becomes an ordinary reservation (buyers hash,
  stock, the orders stream), so the order pipeline records it and pay, cancel and expiry apply.

  The cursor is the place in the draw order of the next entrant to serve. The caller passes the
  entrants from the place it read the cursor at; a caller whose place is stale (another process
  served meanwhile) changes nothing and is told the cursor. So entrants are served in draw order,
  each at most once (the cursor only moves forward), and never more units than the stock.

  KEYS[1]  stock: units left
  KEYS[2]  open: exists until the sale ends
  KEYS[3]  buyers: hash {user id: units held}
  KEYS[4]  orders stream
  KEYS[5]  recovering: exists while the sale is being rebuilt from the record
  KEYS[6]  cursor: the place of the next entrant to serve (set by cursor.lua)
  ARGV[1]  the place of the first entrant given
  ARGV[2]  n, entrants given
  ARGV[3 .. 2+n]      their user ids, in draw order
  ARGV[3+n .. 2+2n]   an order id for each

  Returns  {next cursor, units given}; {-1} no stock key (Redis lost the sale: recovery rebuilds it);
           {-3} the sale has ended; {-8} the sale is being recovered; {-9} no cursor (the caller
           rebuilds it from the record); {-10, cursor} stale place: nothing written.
]]
if redis.call('exists', KEYS[5]) == 1 then
  return { -8 }
end
local stock = redis.call('get', KEYS[1])
if not stock then
  return { -1 }
end
if redis.call('exists', KEYS[2]) == 0 then
  return { -3 }
end
local cursor = redis.call('get', KEYS[6])
if not cursor then
  return { -9 }
end
if cursor ~= ARGV[1] then
  return { -10, tonumber(cursor) }
end
local left = tonumber(stock)
local place = tonumber(cursor)
local n = tonumber(ARGV[2])
local given = 0
for i = 1, n do
  if left <= 0 then
    break
  end
  local user = ARGV[2 + i]
  redis.call('hincrby', KEYS[3], user, 1)
  redis.call('xadd', KEYS[4], '*', 'order', ARGV[2 + n + i], 'user', user, 'qty', '1')
  left = left - 1
  given = given + 1
  place = place + 1
end
if given > 0 then
  redis.call('decrby', KEYS[1], given)
  redis.call('set', KEYS[6], place)
end
return { place, given }

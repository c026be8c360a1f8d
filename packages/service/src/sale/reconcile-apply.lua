--[[
  Repairs a sale's Redis stock and buyer counts after reconciliation. Reservations made since the
  snapshot lowered the stock by (snapshot stock - current stock); they are subtracted from the target
  too, so the repair never hands out a unit twice. Buyer counts are only raised, never lowered.
  Units the repair puts back go to the sale's waitlist first, as offers (waitlist/lua/give-back.lua),
  like any unit that comes back; only the rest reach the stock. A sale that was missing at the
  snapshot was put back whole by the warm since (its line included): its stock is left as it is.

  KEYS[1]  stock (units left)
  KEYS[2]  buyers: hash {user id: units held}
  KEYS[3]  restock channel (shard channel of the sale)
  KEYS[4]  open: the per-user limit; exists until the sale ends
  KEYS[5]  waitlist: sorted set {buyer: recorded place}
  KEYS[6]  offers: sorted set {buyer: when the offer ends, ms}
  ARGV[1]  stock seen by the snapshot (-1 if it was missing)
  ARGV[2]  target stock as of the snapshot
  ARGV[3]  how long an offer to a waitlisted buyer holds its unit, ms
  ARGV[4..] pairs: user id, units the user holds by the record and the unapplied entries

  Returns  the stock after the repair.
]]
-- @include waitlist/lua/give-back.lua
-- Buyer counts are raised first: a head the record shows at the limit is not offered a unit.
for i = 4, #ARGV - 1, 2 do
  local held = tonumber(redis.call('hget', KEYS[2], ARGV[i]) or '0')
  if held < tonumber(ARGV[i + 1]) then
    redis.call('hset', KEYS[2], ARGV[i], ARGV[i + 1])
  end
end
local current = tonumber(redis.call('get', KEYS[1]) or '-1')
local seen = tonumber(ARGV[1])
if seen < 0 and current >= 0 then
  return current
end
local since = 0
if seen >= 0 and current >= 0 then
  since = math.max(0, seen - current)
end
local repaired = math.max(0, tonumber(ARGV[2]) - since)
local base = math.max(0, current)
if repaired > base then
  redis.call('set', KEYS[1], base)
  local t = redis.call('time')
  local wl = {
    open = KEYS[4], buyers = KEYS[2], waitlist = KEYS[5], offers = KEYS[6],
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), offer_ms = tonumber(ARGV[3]),
  }
  if give_back(KEYS[1], wl, repaired - base) > 0 then
    redis.call('spublish', KEYS[3], 'repair') -- processes that remember the sale as sold out ask again
  end
else
  redis.call('set', KEYS[1], repaired)
end
return tonumber(redis.call('get', KEYS[1]))

--[[
  Repairs a sale's Redis stock and buyer counts after reconciliation. Reservations made since the
  snapshot lowered the stock by (snapshot stock - current stock); they are subtracted from the target
  too, so the repair never hands out a unit twice. Buyer counts are only raised, never lowered.

  KEYS[1]  stock (units left)
  KEYS[2]  buyers: hash {user id: units held}
  KEYS[3]  restock channel (shard channel of the sale)
  ARGV[1]  stock seen by the snapshot (-1 if it was missing)
  ARGV[2]  target stock as of the snapshot
  ARGV[3..] pairs: user id, units the user holds by the record and the unapplied entries

  Returns  the stock after the repair.
]]
local current = tonumber(redis.call('get', KEYS[1]) or '-1')
local seen = tonumber(ARGV[1])
local since = 0
if seen >= 0 and current >= 0 then
  since = math.max(0, seen - current)
end
local repaired = math.max(0, tonumber(ARGV[2]) - since)
redis.call('set', KEYS[1], repaired)
if repaired > current then
  redis.call('spublish', KEYS[3], 'repair') -- processes that remember the sale as sold out ask again
end
for i = 3, #ARGV - 1, 2 do
  local held = tonumber(redis.call('hget', KEYS[2], ARGV[i]) or '0')
  if held < tonumber(ARGV[i + 1]) then
    redis.call('hset', KEYS[2], ARGV[i], ARGV[i + 1])
  end
end
return repaired

--[[
  Puts a sale into Redis for reservations, unless it is already there (re-warming must never reset
  the stock of a running sale; use reconciliation to repair it). The window becomes two keys that
  expire on Redis's clock: not-before at the start, open (holding the per-user limit) at the end.
  A sale kept in the layout before 0.3 (one meta hash) is moved to this one with its count.

  KEYS[1]  stock
  KEYS[2]  not-before
  KEYS[3]  open
  KEYS[4]  legacy meta hash {total, limit, remaining}
  KEYS[5]  restock channel (shard channel of the sale)
  ARGV[1]  startsAt, ms since epoch (0: started already, no not-before key)
  ARGV[2]  endsAt, ms since epoch
  ARGV[3]  per-user limit
  ARGV[4]  units left to reserve (the total for a new sale)

  Returns  1 warmed; 0 it was already there (nothing changed).
]]
if redis.call('exists', KEYS[1]) == 1 then
  return 0
end
local remaining = redis.call('hget', KEYS[4], 'remaining') or ARGV[4]
redis.call('del', KEYS[4])
redis.call('set', KEYS[1], remaining)
if ARGV[1] ~= '0' then
  redis.call('set', KEYS[2], '1', 'PXAT', ARGV[1])
end
redis.call('set', KEYS[3], ARGV[3], 'PXAT', ARGV[2])
-- A process that remembered this sale as sold out (before Redis lost it) must ask again.
redis.call('spublish', KEYS[5], 'warm')
return 1

--[[
  Puts a sale into Redis for reservations, unless it is already there (re-warming must never reset
  the stock of a running sale; use reconciliation to repair it). The window becomes two keys that
  expire on Redis's clock: not-before at the start, open at the end.

  KEYS[1]  meta hash
  KEYS[2]  not-before
  KEYS[3]  open
  ARGV[1]  total stock
  ARGV[2]  startsAt, ms since epoch (0: started already, no not-before key)
  ARGV[3]  endsAt, ms since epoch
  ARGV[4]  per-user limit
  ARGV[5]  units left to reserve (the total for a new sale)

  Returns  1 warmed; 0 it was already there (nothing changed).
]]
if redis.call('exists', KEYS[1]) == 1 then
  return 0
end
redis.call('hset', KEYS[1], 'total', ARGV[1], 'limit', ARGV[4], 'remaining', ARGV[5])
if ARGV[2] ~= '0' then
  redis.call('set', KEYS[2], '1', 'PXAT', ARGV[2])
end
redis.call('set', KEYS[3], '1', 'PXAT', ARGV[3])
return 1

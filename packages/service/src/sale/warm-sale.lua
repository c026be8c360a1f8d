--[[
  Puts a sale into Redis for reservations, unless it is already there (re-warming must never reset
  the stock of a running sale; use reconciliation to repair it). The window becomes two keys that
  expire on Redis's clock: not-before at the start, open (holding the per-user limit) at the end.
  A sale kept in the layout before 0.3 (one meta hash) is moved to this one with its count.
  Given the recorded waitlist (ARGV[5..]), the line goes back with the stock and the
  units are offered to its head first (waitlist/lua/give-back.lua): a sale Redis lost with buyers
  waiting never sells its units to whoever asks first.

  KEYS[1]  stock
  KEYS[2]  not-before
  KEYS[3]  open
  KEYS[4]  legacy meta hash {total, limit, remaining}
  KEYS[5]  restock channel (shard channel of the sale)
  KEYS[6]  buyers: hash {user id: units held}
  KEYS[7]  waitlist: sorted set {buyer: recorded place}
  KEYS[8]  offers: sorted set {buyer: when the offer ends, ms}
  ARGV[1]  startsAt, ms since epoch (0: started already, no not-before key)
  ARGV[2]  endsAt, ms since epoch
  ARGV[3]  per-user limit
  ARGV[4]  units left to reserve (the total for a new sale)
  ARGV[5]  how long an offer holds its unit, ms; '': a new sale (nobody waits, the waitlist is not touched)
  ARGV[6..] the recorded line, pairs of place and user id (waitlist/sql/recorded-line.sql)

  Returns  1 warmed; 0 it was already there (nothing changed).
]]
-- @include waitlist/lua/give-back.lua
if redis.call('exists', KEYS[1]) == 1 then
  return 0
end
local remaining = redis.call('hget', KEYS[4], 'remaining') or ARGV[4]
redis.call('del', KEYS[4])
if ARGV[1] ~= '0' then
  redis.call('set', KEYS[2], '1', 'PXAT', ARGV[1])
end
redis.call('set', KEYS[3], ARGV[3], 'PXAT', ARGV[2])
if ARGV[5] ~= '' then
  -- Offers Redis kept without the stock are counted in `remaining` (the record's): they start over.
  redis.call('del', KEYS[7], KEYS[8])
  for i = 6, #ARGV, 2 do
    redis.call('zadd', KEYS[7], ARGV[i], ARGV[i + 1])
  end
  redis.call('set', KEYS[1], 0)
  local t = redis.call('time')
  local wl = {
    open = KEYS[3], buyers = KEYS[6], waitlist = KEYS[7], offers = KEYS[8],
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), offer_ms = tonumber(ARGV[5]),
  }
  give_back(KEYS[1], wl, tonumber(remaining))
else
  redis.call('set', KEYS[1], remaining)
end
-- A process that remembered this sale as sold out (before Redis lost it) must ask again.
redis.call('spublish', KEYS[5], 'warm')
return 1

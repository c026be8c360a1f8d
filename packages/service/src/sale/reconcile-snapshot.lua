--[[
  Reads, in one atomic step, what reconciliation needs from Redis for one sale: the units left, and
  what the order pipeline has not applied to the record yet — the stream entries it has not
  acknowledged (pending with a consumer, or not delivered yet): reservations hold units, cancelled and
  expired orders gave theirs back (Redis counts that already, the record not yet), payments change no
  count.

  KEYS[1]  stock (units left)
  KEYS[2]  orders stream
  KEYS[3]  offers: units held apart for waitlisted buyers, one per member (waitlist/)
  ARGV[1]  consumer group name

  Returns  {units left or -1 if the sale is missing, net units in unacknowledged entries,
            {user id, net units, ...} for the users those entries concern, units held as offers}
]]
-- @include unacknowledged.lua
local remaining = tonumber(redis.call('get', KEYS[1]) or '-1')
local held = redis.call('zcard', KEYS[3])
if redis.call('exists', KEYS[2]) == 0 then
  return { remaining, 0, {}, held }
end
local tally = new_unit_tally()
for_each_unacknowledged(KEYS[2], ARGV[1], tally.add)
return { remaining, tally.total, tally.users(), held }

--[[
  reconcile-snapshot.lua for one part of a split sale, in one atomic step: the part's units left and
  in flight (debited for transfers not finished), what its unacknowledged order entries hold
  (reservations hold units, cancellations and expiries gave them back, payments change no count), and
  its unacknowledged transfer steps, which the record does not count yet.

  KEYS[1]  stock of the part
  KEYS[2]  inflight of the part
  KEYS[3]  the part's orders stream
  ARGV[1]  consumer group name

  Returns  {units left or -1 if the part is missing, units in flight, net units in unacknowledged
            order entries, {user id, net units, ...}, {transfer id, "out" | "in", other part, units, ...}}
]]
-- @include ../../unacknowledged.lua
local remaining = tonumber(redis.call('get', KEYS[1]) or '-1')
local inflight = tonumber(redis.call('get', KEYS[2]) or '0')
if redis.call('exists', KEYS[3]) == 0 then
  return { remaining, inflight, 0, {}, {} }
end
local tally = new_unit_tally()
local moves = {}
local directions = { ['transfer-out'] = 'out', ['transfer-in'] = 'in' }
for_each_unacknowledged(KEYS[3], ARGV[1], function(fields)
  local direction = directions[fields['event'] or '']
  if not direction then
    tally.add(fields)
    return
  end
  moves[#moves + 1] = fields['transfer']
  moves[#moves + 1] = direction
  moves[#moves + 1] = fields['part']
  moves[#moves + 1] = fields['qty']
end)
return { remaining, inflight, tally.total, tally.users(), moves }

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
local remaining = tonumber(redis.call('get', KEYS[1]) or '-1')
local inflight = tonumber(redis.call('get', KEYS[2]) or '0')
if redis.call('exists', KEYS[3]) == 0 then
  return { remaining, inflight, 0, {}, {} }
end
local total = 0
local by_user = {}
local moves = {}
local directions = { ['transfer-out'] = 'out', ['transfer-in'] = 'in' }
local function count(entry)
  local fields = {}
  for i = 1, #entry[2], 2 do
    fields[entry[2][i]] = entry[2][i + 1]
  end
  local event = fields['event']
  if event and directions[event] then
    moves[#moves + 1] = fields['transfer']
    moves[#moves + 1] = directions[event]
    moves[#moves + 1] = fields['part']
    moves[#moves + 1] = fields['qty']
    return
  end
  local units = tonumber(fields['qty'] or '0')
  if event == 'paid' then
    return
  elseif event then
    units = -units
  end
  total = total + units
  if fields['user'] then
    by_user[fields['user']] = (by_user[fields['user']] or 0) + units
  end
end
local last = '0-0'
for _, group in ipairs(redis.call('xinfo', 'groups', KEYS[3])) do
  for i = 1, #group, 2 do
    if group[i] == 'name' and group[i + 1] == ARGV[1] then
      for j = 1, #group, 2 do
        if group[j] == 'last-delivered-id' then
          last = group[j + 1]
        end
      end
    end
  end
end
for _, entry in ipairs(redis.call('xrange', KEYS[3], '(' .. last, '+')) do
  count(entry)
end
for _, pending in ipairs(redis.call('xpending', KEYS[3], ARGV[1], '-', '+', 1000000)) do
  local entry = redis.call('xrange', KEYS[3], pending[1], pending[1])[1]
  if entry then
    count(entry)
  end
end
local users = {}
for user, units in pairs(by_user) do
  if units ~= 0 then
    users[#users + 1] = user
    users[#users + 1] = units
  end
end
return { remaining, inflight, total, users, moves }

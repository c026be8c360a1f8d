--[[
  Reads, in one atomic step, what reconciliation needs from Redis for one sale: the units left, and
  what the order pipeline has not applied to the record yet — the stream entries it has not
  acknowledged (pending with a consumer, or not delivered yet): reservations hold units, cancelled and
  expired orders gave theirs back (Redis counts that already, the record not yet), payments change no
  count.

  KEYS[1]  stock (units left)
  KEYS[2]  orders stream
  ARGV[1]  consumer group name

  Returns  {units left or -1 if the sale is missing, net units in unacknowledged entries,
            {user id, net units, ...} for the users those entries concern}
]]
local remaining = tonumber(redis.call('get', KEYS[1]) or '-1')
if redis.call('exists', KEYS[2]) == 0 then
  return { remaining, 0, {} }
end
local total = 0
local by_user = {}
local function count(entry)
  local fields = {}
  for i = 1, #entry[2], 2 do
    fields[entry[2][i]] = entry[2][i + 1]
  end
  local units = tonumber(fields['qty'] or '0')
  local event = fields['event']
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
for _, group in ipairs(redis.call('xinfo', 'groups', KEYS[2])) do
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
for _, entry in ipairs(redis.call('xrange', KEYS[2], '(' .. last, '+')) do
  count(entry)
end
for _, pending in ipairs(redis.call('xpending', KEYS[2], ARGV[1], '-', '+', 1000000)) do
  local entry = redis.call('xrange', KEYS[2], pending[1], pending[1])[1]
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
return { remaining, total, users }

--[[
  Fragment (included by reconcile-snapshot.lua and shards/lua/part-snapshot.lua): the entries of an
  orders stream that the order pipeline has not applied to the record yet, and the units they hold.

  for_each_unacknowledged(stream, group, visit): calls visit(fields) ({field: value}) for every entry
    the consumer group has not acknowledged: those not delivered to it yet, then those pending with
    one of its consumers. The stream must exist.
  new_unit_tally(): a tally whose add(fields) counts one order entry — a reservation holds its units,
    a cancellation or an expiry gave them back (Redis counts that already, the record not yet), a
    payment changes no count — into `total` and per user; users() lists {user id, net units, ...}
    for the users whose net is not zero.
]]
local function fields_of(entry)
  local fields = {}
  for i = 1, #entry[2], 2 do
    fields[entry[2][i]] = entry[2][i + 1]
  end
  return fields
end

local function for_each_unacknowledged(stream, group, visit)
  local last = '0-0'
  for _, info in ipairs(redis.call('xinfo', 'groups', stream)) do
    for i = 1, #info, 2 do
      if info[i] == 'name' and info[i + 1] == group then
        for j = 1, #info, 2 do
          if info[j] == 'last-delivered-id' then
            last = info[j + 1]
          end
        end
      end
    end
  end
  for _, entry in ipairs(redis.call('xrange', stream, '(' .. last, '+')) do
    visit(fields_of(entry))
  end
  for _, pending in ipairs(redis.call('xpending', stream, group, '-', '+', 1000000)) do
    local entry = redis.call('xrange', stream, pending[1], pending[1])[1]
    if entry then
      visit(fields_of(entry))
    end
  end
end

local function new_unit_tally()
  local tally = { total = 0 }
  local by_user = {}
  function tally.add(fields)
    local event = fields['event']
    if event == 'paid' then
      return
    end
    local units = tonumber(fields['qty'] or '0')
    if event then
      units = -units
    end
    tally.total = tally.total + units
    if fields['user'] then
      by_user[fields['user']] = (by_user[fields['user']] or 0) + units
    end
  end
  function tally.users()
    local users = {}
    for user, units in pairs(by_user) do
      if units ~= 0 then
        users[#users + 1] = user
        users[#users + 1] = units
      end
    end
    return users
  end
  return tally
end

--[[
  Reads, in one atomic step, what reconciliation needs from Redis for one sale: the units left, and
  the units reserved but not yet recorded — the stream entries the order pipeline has not
  acknowledged (pending with a consumer, or not delivered yet).

  KEYS[1]  stock (units left)
  KEYS[2]  orders stream
  ARGV[1]  consumer group name

  Returns  {remaining or -1 if the sale is missing, units in unacknowledged entries}
]]
local remaining = tonumber(redis.call('get', KEYS[1]) or '-1')
if redis.call('exists', KEYS[2]) == 0 then
  return { remaining, 0 }
end
local function units(entry)
  local fields = entry[2]
  for i = 1, #fields, 2 do
    if fields[i] == 'qty' then
      return tonumber(fields[i + 1])
    end
  end
  return 0
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
local total = 0
for _, entry in ipairs(redis.call('xrange', KEYS[2], '(' .. last, '+')) do
  total = total + units(entry)
end
for _, pending in ipairs(redis.call('xpending', KEYS[2], ARGV[1], '-', '+', 1000000)) do
  local entry = redis.call('xrange', KEYS[2], pending[1], pending[1])[1]
  if entry then
    total = total + units(entry)
  end
end
return { remaining, total }

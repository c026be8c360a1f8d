--[[
  Reads what the dashboard shows about one sale from Redis, in one step: stock left, purchase
  attempts by outcome, visitors, and the order pipeline's backlog on the sale's stream. Writes
  nothing (PFCOUNT may only refresh the HyperLogLog's cached cardinality).

  KEYS[1]  stock (units left)
  KEYS[2]  outcomes hash {outcome: attempts}
  KEYS[3]  visitors HyperLogLog
  KEYS[4]  orders stream
  KEYS[5]  dead-letter stream
  ARGV[1]  consumer group of the order pipeline

  Returns  {remaining (-1: the sale is not in Redis), {outcome, attempts, ...}, visitors,
            dead letters, pending (delivered to a consumer, not acknowledged),
            undelivered (not yet read by the group), id of the oldest unacknowledged entry ('' if none),
            Redis time in ms (the clock of the entry ids)}
]]
local remaining = tonumber(redis.call('get', KEYS[1]) or '-1')
local outcomes = redis.call('hgetall', KEYS[2])
local visitors = redis.call('pfcount', KEYS[3])
local dead = redis.call('xlen', KEYS[5])
local time = redis.call('time')
local now_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local pending, undelivered, oldest = 0, 0, ''
if redis.call('exists', KEYS[4]) == 1 then
  local last, lag = '0-0', false
  for _, group in ipairs(redis.call('xinfo', 'groups', KEYS[4])) do
    local fields = {}
    for i = 1, #group, 2 do
      fields[group[i]] = group[i + 1]
    end
    if fields['name'] == ARGV[1] then
      pending = fields['pending']
      last = fields['last-delivered-id']
      lag = fields['lag']
    end
  end
  local first_new = redis.call('xrange', KEYS[4], '(' .. last, '+', 'COUNT', 1)[1]
  if lag then
    undelivered = lag
  elseif first_new then
    -- Redis cannot always tell the lag (after deletions); count, bounded: a dashboard can say "10000+".
    undelivered = #redis.call('xrange', KEYS[4], '(' .. last, '+', 'COUNT', 10000)
  end
  if pending > 0 then
    oldest = redis.call('xpending', KEYS[4], ARGV[1])[2]
  elseif first_new then
    oldest = first_new[1]
  end
end
return { remaining, outcomes, visitors, dead, pending, undelivered, oldest, now_ms }

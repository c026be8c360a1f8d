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
-- @include backlog.lua
local remaining = tonumber(redis.call('get', KEYS[1]) or '-1')
local outcomes = redis.call('hgetall', KEYS[2])
local visitors = redis.call('pfcount', KEYS[3])
local dead = redis.call('xlen', KEYS[5])
local time = redis.call('time')
local now_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local pending, undelivered, oldest = stream_backlog(KEYS[4], ARGV[1])
return { remaining, outcomes, visitors, dead, pending, undelivered, oldest, now_ms }

--[[
  Reads what /metrics shows about one sale (or one part of a split sale) from Redis, in one step:
  units left, whether the sale is still open, the order pipeline's backlog on the stream, the
  dead-letter stream's length and, for a part, what its transfers have in flight. Writes nothing.
  Cheaper than stats.lua (no outcomes hash, no HyperLogLog): it runs at every Prometheus scrape.

  KEYS[1]  stock (units left)
  KEYS[2]  open (exists until the sale ends)
  KEYS[3]  not-before (exists until the sale starts)
  KEYS[4]  orders stream
  KEYS[5]  dead-letter stream
  KEYS[6]  inflight (a part's units debited by unfinished transfers; absent for a one-part sale)
  KEYS[7]  transfers (a part's pending outgoing transfers; absent for a one-part sale)
  ARGV[1]  consumer group of the order pipeline

  Returns  {remaining (-1: not in Redis), open (1: not ended), unrecorded entries (pending +
            undelivered), id of the oldest unrecorded entry ('' if none), Redis time in ms,
            dead letters, units in flight, transfers in flight}
]]
-- @include backlog.lua
local remaining = tonumber(redis.call('get', KEYS[1]) or '-1')
local open = 0
if redis.call('exists', KEYS[2]) == 1 or redis.call('exists', KEYS[3]) == 1 then
  open = 1
end
local dead = redis.call('xlen', KEYS[5])
local inflight = tonumber(redis.call('get', KEYS[6]) or '0')
local transfers = redis.call('hlen', KEYS[7])
local time = redis.call('time')
local now_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local pending, undelivered, oldest = stream_backlog(KEYS[4], ARGV[1])
local unrecorded = pending + undelivered
return { remaining, open, unrecorded, oldest, now_ms, dead, inflight, transfers }

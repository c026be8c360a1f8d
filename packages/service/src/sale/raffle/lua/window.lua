--[[
  A raffle's entry window in Redis: load it (from the record), or close it now (the draw's first
  step: no entry is accepted after this, on Redis's clock, so the stream then holds every entry
  still to record).

  KEYS[1]  raffle window: hash {opens, closes}, ms since epoch (Redis clock)
  ARGV[1]  'load' or 'close'
  ARGV[2]  load: opens (ms); ARGV[3] load: closes (ms)

  Returns  load: 1 loaded; 0 it was there (never moved: a window closed early stays closed).
           close: 1 (a window Redis lost is written closed, so a late load cannot reopen it).
]]
if ARGV[1] == 'load' then
  if redis.call('exists', KEYS[1]) == 1 then
    return 0
  end
  redis.call('hset', KEYS[1], 'opens', ARGV[2], 'closes', ARGV[3])
  return 1
end
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local closes = tonumber(redis.call('hget', KEYS[1], 'closes') or now)
if closes > now then
  closes = now
end
redis.call('hset', KEYS[1], 'closes', closes)
redis.call('hsetnx', KEYS[1], 'opens', 0)
return 1

--[[
  Included by the room's scripts (not run alone): admits waiting buyers at the room's pace.

  advance(config, state, queue, admitted, active, stream, now) — `config` is the room's settings (a
  table read from its hash), `state`, `queue`, `admitted`, `active` and `stream` (the sale's orders
  stream) are key names, `now` the Redis time in ms.

  Nobody is admitted before the end of the first shuffle window (openAt + shuffleMs): whoever comes
  before the sale starts or within its first window is admitted in random order, not as they came
  (admitting during that window would favour those who came first, the fastest).
  The pace is a token bucket on the Redis clock, so every serve process admits from one budget: credit
  grows by rate/1000 per ms from then; each call pops floor(credit) buyers (at most all who
  wait) with the lowest scores and records them admitted at `now`. The queue only changes inside these
  scripts, so whoever waited at this call waited since the previous one: the credit of that time is
  theirs. With nobody left waiting the credit is cut to 1 (an empty room saves up no burst), so the
  admitted by time t are never more than 1 + rate × (t − first join) in total.

  Active buyers: every admission is in `active` until it is spent (reserve-admitted.lua removes it)
  or its time is up (its score); with `maxActive` > 0 at most that many are admitted and not done at
  once: a call admits no more than the free slots, and a room held back by its cap saves up no burst
  either (credit cut to 1). Paused (`paused` = 1), it admits nobody and saves up nothing; so does a room
  whose order pipeline is behind: with `maxBacklog` > 0, while the pipeline's consumer group has more
  reservations of this sale not yet recorded (lag + pending, XINFO GROUPS) than that, nobody is admitted.
  Returns the number admitted now.
]]
-- Reservations of the sale the order pipeline has not recorded yet: undelivered (lag) plus delivered
-- and not acknowledged (pending); nil when the stream cannot say (no group yet, lag unknown).
local function backlog(stream, group)
  if redis.call('exists', stream) == 0 then return 0 end
  for _, info in ipairs(redis.call('xinfo', 'groups', stream)) do
    local fields = {}
    for i = 1, #info, 2 do fields[info[i]] = info[i + 1] end
    if fields.name == group then
      if type(fields.lag) ~= 'number' then return nil end
      return fields.lag + fields.pending
    end
  end
  return nil
end

local function advance(config, state, queue, admitted, active, stream, now)
  local rate = tonumber(config.rate)
  local admitFrom = tonumber(config.openAt) + tonumber(config.shuffleMs)
  local saved = redis.call('hmget', state, 'credit', 'last')
  local credit = tonumber(saved[1] or '0')
  local last = tonumber(saved[2] or '0')
  if last < admitFrom then last = admitFrom end
  if now <= last then return 0 end
  redis.call('zremrangebyscore', active, '-inf', now) -- lapsed admissions free their slots
  local behind = false
  local maxBacklog = tonumber(config.maxBacklog or '0')
  if maxBacklog > 0 then
    local pending = backlog(stream, config.orderGroup)
    behind = pending ~= nil and pending > maxBacklog
  end
  if config.paused == '1' or behind then
    redis.call('hset', state, 'credit', '0', 'last', now)
    return 0
  end
  local waiting = redis.call('zcard', queue)
  credit = credit + (now - last) * rate / 1000
  local n = math.floor(credit)
  if n > waiting then n = waiting end
  local held = false
  local cap = tonumber(config.maxActive or '0')
  if cap > 0 then
    local free = cap - redis.call('zcard', active)
    if free < 0 then free = 0 end
    if n > free then
      n = free
      held = true
    end
  end
  if n > 0 then
    local ends = now + tonumber(config.admitMs)
    local popped = redis.call('zpopmin', queue, n)
    for i = 1, #popped, 2 do
      redis.call('hset', admitted, popped[i], now)
      redis.call('zadd', active, ends, popped[i])
    end
    credit = credit - n
    redis.call('hincrby', state, 'admitted', n)
  end
  if (waiting == n or held) and credit > 1 then credit = 1 end
  redis.call('hset', state, 'credit', string.format('%.6f', credit), 'last', now)
  return n
end

-- The room's settings as a table (nil: the sale has no room in Redis).
local function roomConfig(key)
  local flat = redis.call('hgetall', key)
  if #flat == 0 then return nil end
  local config = {}
  for i = 1, #flat, 2 do config[flat[i]] = flat[i + 1] end
  return config
end

local function redisNowMs()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

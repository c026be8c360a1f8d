--[[
  Fragment (included by inspect.lua and finish.lua): stream entry ids ("<ms>-<seq>").
]]
-- Whether id a is lower than id b (ms compared first; both are exact below 2^53).
local function id_below(a, b)
  local a_ms, a_seq = string.match(a, '^(%d+)-(%d+)$')
  local b_ms, b_seq = string.match(b, '^(%d+)-(%d+)$')
  a_ms, b_ms = tonumber(a_ms), tonumber(b_ms)
  if a_ms ~= b_ms then
    return a_ms < b_ms
  end
  return tonumber(a_seq) < tonumber(b_seq)
end

-- The stream's last generated id and whether the consumer group exists ('' and false: no stream).
local function stream_state(stream, group)
  if redis.call('exists', stream) == 0 then
    return '', false
  end
  local last = ''
  local info = redis.call('xinfo', 'stream', stream)
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then
      last = info[i + 1]
    end
  end
  for _, g in ipairs(redis.call('xinfo', 'groups', stream)) do
    for i = 1, #g, 2 do
      if g[i] == 'name' and g[i + 1] == group then
        return last, true
      end
    end
  end
  return last, false
end

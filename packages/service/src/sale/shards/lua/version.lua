--[[
  Fragment: a part's version after a change that did not come from one of its own increments (a
  part created or rebuilt): at least one above what it was, and at least Redis's time in µs. A part
  that Redis lost and that is made again never repeats a version it showed before — increments are
  one per script, and no script takes under a µs, so a version never runs ahead of the clock.
]]
local function bump_version(version)
  local time = redis.call('time')
  local now_us = tonumber(time[1]) * 1000000 + tonumber(time[2])
  local current = tonumber(redis.call('get', version) or '0')
  redis.call('set', version, string.format('%d', math.max(current + 1, now_us)))
end

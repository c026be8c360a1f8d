--[[
  What the dashboard shows of a sale's waiting room. Writes nothing.

  KEYS[1..4]  config, state, queue, admitted (see join.lua)
  KEYS[5]     active (see join.lua)

  Returns  {} without a room; else {rate, waiting, admitted (recorded admissions), joined,
           powBits, active (admitted and not yet done), maxActive (0: no cap), paused (0 or 1)}.
]]
local flat = redis.call('hgetall', KEYS[1])
if #flat == 0 then return {} end
local config = {}
for i = 1, #flat, 2 do config[flat[i]] = flat[i + 1] end
local joined = redis.call('hget', KEYS[2], 'joined') or '0'
local t = redis.call('time') -- admissions that ended by now (Redis clock) are not active
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {
  config.rate, redis.call('zcard', KEYS[3]), redis.call('hlen', KEYS[4]), joined, config.powBits or '0',
  redis.call('zcount', KEYS[5], '(' .. now, '+inf'), config.maxActive or '0', config.paused or '0',
}

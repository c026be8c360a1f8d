--[[
  What the dashboard shows of a sale's waiting room. Writes nothing.

  KEYS[1..4]  config, state, queue, admitted (see join.lua)

  Returns  {} without a room; else {rate, waiting, admitted (recorded admissions), joined,
           powBits}.
]]
-- @include advance.lua
local config = roomConfig(KEYS[1])
if not config then return {} end
local joined = redis.call('hget', KEYS[2], 'joined') or '0'
return {config.rate, redis.call('zcard', KEYS[3]), redis.call('hlen', KEYS[4]), joined, config.powBits or '0'}

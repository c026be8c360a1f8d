--[[
  Fragment (included with `-- @include permits-check.lua` at the top of a semaphore's acquire): the
  permit count lives on Redis. The first acquire stores the count its client was made with; an acquire
  made with another count is refused with an error reply 'LOCKSTOCK_PERMITS <stored>' (two services
  configured differently must not each admit their own number). setPermits changes it for everyone.
  Statements, not a function (Lua makes a closure per local function on every call): the including
  script defines `permits_key` and `configured_permits` first.
]]
local stored_permits = redis.call('get', permits_key)
if not stored_permits then
  redis.call('set', permits_key, configured_permits)
elseif stored_permits ~= configured_permits then
  return redis.error_reply('LOCKSTOCK_PERMITS ' .. stored_permits)
end

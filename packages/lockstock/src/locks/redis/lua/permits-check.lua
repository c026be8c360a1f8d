--[[
  Fragment (included with `-- @include permits-check.lua` at the top of a semaphore's acquire): the
  permit count lives on Redis. The first acquire stores the count its client was made with; an acquire
  made with another count is refused with an error reply 'LOCKSTOCK_PERMITS <stored>' (two services
  configured differently must not each admit their own number). setPermits changes it for everyone.
  Takes the including script's permit-count key and configured count.
]]
local function check_permits(permits_key, configured)
  local stored = redis.call('get', permits_key)
  if not stored then
    redis.call('set', permits_key, configured)
  elseif stored ~= configured then
    return redis.error_reply('LOCKSTOCK_PERMITS ' .. stored)
  end
  return nil
end

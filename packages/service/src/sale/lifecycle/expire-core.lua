--[[
  Fragment (included by expire.lua and shards/lua/expire-part.lua): the expiry sweeper's step.

  expire_due(deadlines, settled, stock, buyers, stream, limit, settled_ttl_ms): expires at most
    `limit` orders whose payment deadline has passed (Redis clock) and that nobody settled first,
    giving their units back (settle-core.lua). Returns the number expired now and the ms until the
    next deadline (-1: none left).
]]
-- @include settle-core.lua
local function expire_due(deadlines, settled, stock, buyers, stream, limit, settled_ttl_ms)
  local now = now_ms()
  local due = redis.call('zrangebyscore', deadlines, '-inf', now, 'LIMIT', 0, limit)
  local expired = 0
  for _, member in ipairs(due) do
    redis.call('zrem', deadlines, member)
    local order, user, quantity = string.match(member, '^(%d+):([^:]+):(%d+)$')
    if order and settle(settled, stock, buyers, stream, order, user, tonumber(quantity), 'expired', settled_ttl_ms) then
      expired = expired + 1
    end
  end
  local next = redis.call('zrange', deadlines, 0, 0, 'WITHSCORES')
  if next[2] then
    return expired, math.max(0, tonumber(next[2]) - now)
  end
  return expired, -1
end

--[[
  Fragment (included by expire.lua and shards/lua/expire-part.lua): the expiry sweeper's step.

  expire_due(deadlines, settled, stock, buyers, stream, limit, settled_ttl_ms, wl): expires at most
    `limit` orders whose payment deadline has passed (Redis clock) and that nobody settled first,
    giving their units back (settle-core.lua: to the waitlist first with `wl`, whose `now` it sets).
    Returns the number expired now, the ms until the next deadline (-1: none left) and the units that
    went to the stock.
]]
-- @include settle-core.lua
local function expire_due(deadlines, settled, stock, buyers, stream, limit, settled_ttl_ms, wl)
  local now = now_ms()
  if wl then
    wl.now = now
  end
  local due = redis.call('zrangebyscore', deadlines, '-inf', now, 'LIMIT', 0, limit)
  local expired = 0
  local restocked = 0
  for _, member in ipairs(due) do
    redis.call('zrem', deadlines, member)
    local order, user, quantity = string.match(member, '^(%d+):([^:]+):(%d+)$')
    if order then
      local done, to_stock = settle(settled, stock, buyers, stream, order, user, tonumber(quantity), 'expired', settled_ttl_ms, wl)
      if done then
        expired = expired + 1
        restocked = restocked + to_stock
      end
    end
  end
  local next = redis.call('zrange', deadlines, 0, 0, 'WITHSCORES')
  if next[2] then
    return expired, math.max(0, tonumber(next[2]) - now), restocked
  end
  return expired, -1, restocked
end

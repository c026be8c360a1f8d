--[[
  Fragment (included with `-- @include rw-readers.lua`): the readers of a read-write lock.

    readers  hash {owner: hold count, '\0t:' .. owner: that owner's fencing token}
    leases   zset {owner: lease end, ms on Redis's clock}

  Each reader has its own lease, so a reader that dies is dropped when its lease ends, without
  touching the others. Keys are passed in by the including script.
]]
local TOKEN = '\0t:'

local function now_ms()
  local t = redis.call('time')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end

-- Drops readers whose lease has ended (nothing to do unless the earliest lease has).
local function drop_expired_readers(readers, leases, now)
  local first = redis.call('zrange', leases, 0, 0, 'WITHSCORES')[2]
  if not first or tonumber(first) > now then
    return
  end
  local expired = redis.call('zrangebyscore', leases, '-inf', now)
  for _, owner in ipairs(expired) do
    redis.call('hdel', readers, owner, TOKEN .. owner)
  end
  if #expired > 0 then
    redis.call('zremrangebyscore', leases, '-inf', now)
  end
end

-- Both keys live at least as long as the reader lease just set (`lease` ms from now); a key that
-- already outlives it (another reader's longer lease) is left alone.
local function expire_with_last_reader(readers, leases, lease)
  if redis.call('pttl', leases) < lease then
    redis.call('pexpire', readers, lease)
    redis.call('pexpire', leases, lease)
  end
end

--[[
  Fragment (included with `-- @include hold-count.lua`): one release of a reentrant hold, where the
  lock is a hash {owner: hold count} (reentrant, fair, the writer of a read-write lock).
]]

-- Releases one of `owner`'s holds. Returns nil when it was the last one (the caller frees the lock
-- and decides who is next), else the script's reply: the holds left (n > 0), -1 no lock, -2 another
-- owner's.
local function release_one_hold(lock_key, owner)
  local count = redis.call('hget', lock_key, owner)
  if not count then
    if redis.call('exists', lock_key) == 1 then
      return -2
    end
    return -1
  end
  if tonumber(count) > 1 then
    return redis.call('hincrby', lock_key, owner, -1)
  end
  return nil
end

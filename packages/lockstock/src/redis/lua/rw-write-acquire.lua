--[[
  Takes or re-enters the write side of a read-write lock: free when there is no writer and no reader
  with a live lease. A refused writer that will wait sets the write intent, which keeps new readers
  out until it gets the lock (or stops refreshing it).

  KEYS[1]  writer: hash {owner: hold count, '\0t': token, '\0h': holder record (JSON), when it gave
           one}, the write lease as its TTL
  KEYS[2]  readers: hash (see rw-readers.lua); the fields of readers whose lease ended are dropped
  KEYS[3]  write intent: string (owner id of a waiting writer), TTL ARGV[4]
  KEYS[4]  fencing counter
  ARGV[1]  owner id
  ARGV[2]  lease in milliseconds
  ARGV[3]  1 if the caller will wait (set or refresh the intent), else 0
  ARGV[4]  intent lifetime in milliseconds (the waiting writer tries again within a third of it)
  ARGV[5]  the caller's holder record ('' for none): kept as '\0h' with a first hold, not changed on
           re-entry

  Returns  the fencing token when acquired (re-entry: this owner's token); an error reply
           'LOCKSTOCK_UPGRADE ...' when the owner holds the read lock (it would wait for itself);
           {retry ms} when refused: when the writer's or the first reader's lease ends, at most a
           third of the intent lifetime.
]]
-- @include rw-readers.lua
local owner, lease = ARGV[1], tonumber(ARGV[2])
local intent_ms = tonumber(ARGV[4])
if redis.call('hexists', KEYS[1], owner) == 1 then
  redis.call('hincrby', KEYS[1], owner, 1)
  local ttl = redis.call('pttl', KEYS[1])
  if ttl >= 0 and ttl < lease then
    redis.call('pexpire', KEYS[1], lease)
  end
  return tonumber(redis.call('hget', KEYS[1], '\0t'))
end
local now = now_ms()
if read_hold(KEYS[2], owner, now) then
  -- It would wait for its own read hold forever.
  return redis.error_reply('LOCKSTOCK_UPGRADE a read holder cannot take the write lock')
end
local blocked = 0
local writer = redis.call('pttl', KEYS[1])
if writer ~= -2 then
  blocked = math.max(writer, 1)
elseif redis.call('exists', KEYS[2]) == 1 then
  local live, earliest = live_readers(KEYS[2], now)
  if live > 0 then
    blocked = math.max(earliest - now, 1)
  end
end
if blocked == 0 then
  local token = redis.call('incr', KEYS[4])
  if ARGV[5] == '' then
    redis.call('hset', KEYS[1], owner, 1, '\0t', token)
  else
    redis.call('hset', KEYS[1], owner, 1, '\0t', token, '\0h', ARGV[5])
  end
  redis.call('pexpire', KEYS[1], lease)
  if redis.call('get', KEYS[3]) == owner then
    redis.call('del', KEYS[3]) -- another waiting writer's intent stays: it is next
  end
  return token
end
if ARGV[3] == '1' then
  local intent = redis.call('get', KEYS[3])
  if not intent or intent == owner then
    redis.call('set', KEYS[3], owner, 'PX', intent_ms)
  end
end
return { math.min(blocked, math.floor(intent_ms / 3)) }

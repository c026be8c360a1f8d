--[[
  Reads an exclusive lock for inspect(): its lease, its holder and the holder's record, in one step
  (read apart, a new holder could be paired with the last one's record).

  KEYS[1]  lock key: a string holding the owner id (mutex), or a hash {owner: hold count, '\0t':
           token, '\0h': holder record} (reentrant, spin, fair, the writer of a read-write lock); a
           value (mutex) or field (reentrant, spin) starting with '\0' is a turn marker
  KEYS[2]  the mutex's holder record (see mutex-acquire.lua); for a hash, the lock key again (unused)
  ARGV[1]  'string' (mutex) or 'hash' (the others)

  Returns  {pttl} when free or reserved for a client's turn (-2: no key);
           {pttl, owner, record or false} when held (record: what the acquire stored, JSON)
]]
local ttl = redis.call('pttl', KEYS[1])
if ttl == -2 then
  return { ttl }
end
if ARGV[1] == 'string' then
  local owner = redis.call('get', KEYS[1])
  if string.byte(owner, 1) == 0 then
    return { ttl }
  end
  return { ttl, owner, redis.call('get', KEYS[2]) }
end
local fields = redis.call('hgetall', KEYS[1])
local owner
local record = false
for i = 1, #fields, 2 do
  local field = fields[i]
  if field == '\0h' then
    record = fields[i + 1]
  elseif string.byte(field, 1) ~= 0 then
    owner = field
  end
end
if not owner then
  return { ttl }
end
return { ttl, owner, record }

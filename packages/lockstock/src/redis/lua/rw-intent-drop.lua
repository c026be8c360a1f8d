--[[
  A writer that gave up waiting withdraws its write intent (so readers need not wait for it to expire).

  KEYS[1]  write intent: string, the waiting writer's owner id
  ARGV[1]  owner id of the writer giving up

  Returns  1 if the intent was this writer's and is gone, 0 otherwise (another writer's stays).
]]
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0

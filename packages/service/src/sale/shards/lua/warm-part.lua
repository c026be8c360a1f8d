--[[
  Puts one part of a split sale into Redis, unless it is there already (re-warming never resets a
  running part: see warm-sale.lua). The window becomes the part's own two keys, which expire on
  Redis's clock: every script of the part reads its window on its own slot.

  KEYS[1]  stock of the part
  KEYS[2]  not-before
  KEYS[3]  open
  KEYS[4]  version
  KEYS[5]  restock channel of the part
  ARGV[1]  startsAt, ms since epoch (0: started already, no not-before key)
  ARGV[2]  endsAt, ms since epoch
  ARGV[3]  per-user limit
  ARGV[4]  units of the part

  Returns  1 warmed; 0 it was already there (nothing changed).
]]
-- @include version.lua
if redis.call('exists', KEYS[1]) == 1 then
  return 0
end
redis.call('set', KEYS[1], ARGV[4])
if ARGV[1] ~= '0' then
  redis.call('set', KEYS[2], '1', 'PXAT', ARGV[1])
end
redis.call('set', KEYS[3], ARGV[3], 'PXAT', ARGV[2])
bump_version(KEYS[4])
redis.call('spublish', KEYS[5], 'warm')
return 1

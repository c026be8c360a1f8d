--[[
  The last step of a rebuild, atomically: the stock and the time window, the stream and its consumer
  group (made again if Redis lost them), the stream's id floor — new entries must sort after every
  entry the record holds (XSETID), or a new reservation could take the id, and so the inbox row, of a
  recorded one — then the flag goes and the restock message tells every process that remembered the
  sale as sold out to ask again.

  KEYS[1]  recovering (must hold ARGV[1])
  KEYS[2]  stock
  KEYS[3]  not-before
  KEYS[4]  open (holds the per-user limit)
  KEYS[5]  orders stream
  KEYS[6]  restock channel (shard channel of the sale)
  ARGV[1]  token of this rebuild
  ARGV[2]  units left
  ARGV[3]  startsAt, ms since epoch (0: started already, no not-before key)
  ARGV[4]  endsAt, ms since epoch
  ARGV[5]  per-user limit
  ARGV[6]  the newest entry id the record holds ('' if none)
  ARGV[7]  the order pipeline's consumer group

  Returns  1 done; 0 the token is not the flag's (nothing written)
]]
-- @include stream-ids.lua
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('set', KEYS[2], ARGV[2])
if ARGV[3] ~= '0' then
  redis.call('set', KEYS[3], '1', 'PXAT', ARGV[3])
else
  redis.call('del', KEYS[3])
end
redis.call('set', KEYS[4], ARGV[5], 'PXAT', ARGV[4])
local last, has_group = stream_state(KEYS[5], ARGV[7])
if not has_group then
  -- From the start of what the stream still holds: the record's inbox skips what it has.
  redis.call('xgroup', 'create', KEYS[5], ARGV[7], '0', 'MKSTREAM')
  if last == '' then
    last = '0-0'
  end
end
if ARGV[6] ~= '' and id_below(last, ARGV[6]) then
  redis.call('xsetid', KEYS[5], ARGV[6])
end
redis.call('del', KEYS[1])
redis.call('spublish', KEYS[6], 'recovered')
return 1

--[[
  What recovery checks of one sale in Redis, read in one atomic step: whether the sale is there at
  all, whether a rebuild is under way, and how far its stream has come (its last generated id, which
  trimming does not lower: Redis keeps it with the stream). The caller compares that with the newest
  entry the record holds: a stream below the record is a Redis that came back older than it was.

  KEYS[1]  stock (units left)
  KEYS[2]  orders stream
  KEYS[3]  recovering: exists while the sale is being rebuilt
  ARGV[1]  the order pipeline's consumer group

  Returns  {1 if the stock exists else 0, the recovery token or '', the stream's last generated id or
            '' without a stream, 1 if the consumer group exists else 0}
]]
-- @include stream-ids.lua
local last, has_group = stream_state(KEYS[2], ARGV[1])
return {
  redis.call('exists', KEYS[1]),
  redis.call('get', KEYS[3]) or '',
  last,
  has_group and 1 or 0,
}

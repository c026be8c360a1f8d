--[[
  A step of a part's rebuild (recovery/rebuild-part.ts, recovery/lost-credits.ts): a transfer credited to the part
  whose credit Redis lost before any pipeline read it (the master wiped or restarted empty). Its donor
  finished it, so nobody will credit it again: it goes back to `credits` (never credited twice), and
  its `transfer-in` step is appended to the part's stream again, so the record gets the step it never
  saw and the transfer's two steps balance. The rebuild counts its units in the part's allocation.

  KEYS[1]  recovering (must hold ARGV[1])
  KEYS[2]  credits: hash {transfer id: "credited"}
  KEYS[3]  the part's orders stream
  ARGV[1]  token of this rebuild
  ARGV[2]  transfer id
  ARGV[3]  donor part
  ARGV[4]  units

  Returns  1 written; 0 the token is not the flag's (nothing written)
]]
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
-- A rebuild tried again reads this entry in the stream and finds nothing lost: written once.
redis.call('hset', KEYS[2], ARGV[2], 'credited')
redis.call('xadd', KEYS[3], '*', 'event', 'transfer-in', 'transfer', ARGV[2], 'part', ARGV[3], 'qty', ARGV[4])
return 1

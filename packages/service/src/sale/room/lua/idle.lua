--[[
  An admitted buyer found the sale sold out without reaching the reservation script (the process
  answered from memory: sold-out.ts, the gate in front of Fastify). The buyer is done for now, so its
  active slot is freed, as reserve-admitted.lua does on a sold-out answer; the admission itself stays
  valid, should units come back. Only the buyer's current admission frees the slot: an older pass of
  the same buyer (replaced by a newer admission) changes nothing.

  KEYS[1]  the room's admissions: hash {buyer: admitted at}
  KEYS[2]  the room's active buyers: sorted set {buyer: when the admission ends}
  ARGV[1]  buyer id
  ARGV[2]  the admitted-at the buyer's signed admission carries (ms, Redis clock)

  Returns  1 the slot was freed now; 0 it was not held (or the admission is not the current one).
]]
if redis.call('hget', KEYS[1], ARGV[1]) ~= ARGV[2] then
  return 0
end
return redis.call('zrem', KEYS[2], ARGV[1])

--[[
  A split sale's admission (its parts live on other slots than its room, so the reservation cannot
  spend it in its own step): spent before the reservation, given back if the reservation is refused.
  A crash between the two leaves it spent: the buyer joins again (never a second order on one pass).

  KEYS[1]  the room's config hash
  KEYS[2]  admitted: hash {buyer: admitted at}
  KEYS[3]  spent: hash {buyer: admitted at of the admission spent}
  KEYS[4]  active: sorted set {buyer: when the admission ends}
  ARGV[1]  buyer id
  ARGV[2]  the admitted-at the buyer's signed admission carries
  ARGV[3]  'spend'; 'return' (given back whole: the slot too); 'return-idle' (the reservation found
           nothing to sell: valid again, but its active slot is freed)

  Returns  1 spent (or given back); else admission.lua's refusal: -9 used or replaced, -10 not valid
           yet, -11 lapsed, -12 no room in Redis.
]]
-- @include admission.lua
if ARGV[3] ~= 'spend' then
  if redis.call('hget', KEYS[3], ARGV[1]) == ARGV[2] then
    redis.call('hdel', KEYS[3], ARGV[1])
    local admitMs = redis.call('hget', KEYS[1], 'admitMs')
    if admitMs and ARGV[3] == 'return' then
      redis.call('zadd', KEYS[4], tonumber(ARGV[2]) + tonumber(admitMs), ARGV[1])
    end
  end
  return 1
end
local refusal = admissionRefusal(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2])
if refusal then return refusal end
spendAdmission(KEYS[2], KEYS[3], KEYS[4], ARGV[1], ARGV[2])
return 1

--[[
  reserve.lua for a sale with a waiting room: the buyer's admission is checked on the Redis clock and
  spent with the reservation, in one step, so one admission buys one order (room/lua/admission.lua).
  A repeated Idempotency-Key answers its original order first, whatever became of the admission
  since (a retry after the admission was spent or lapsed still gets its order). A refusal (sold out,
  the limit) spends nothing; sold out frees the buyer's active slot.

  KEYS[1..6] as in reserve.lua
  KEYS[7]  the (user, key) record "<orderId>:<quantity>" (reserve-idempotent.lua); without a key,
           any key of the sale (ARGV[5] is then '')
  KEYS[8]  the room's config hash {admitMs, noticeMs, …}
  KEYS[9]  the room's admissions: hash {buyer: admitted at}
  KEYS[10] the room's spent admissions: hash {buyer: admitted at of the one spent}
  KEYS[11] the room's active buyers: sorted set {buyer: when the admission ends}
  ARGV[1..3] as in reserve.lua
  ARGV[4]  how long to remember the key, s
  ARGV[5]  the Idempotency-Key, or ''
  ARGV[6]  the admitted-at the buyer's signed admission carries (ms, Redis clock)
  ARGV[7]  optional: the purchase's W3C traceparent, kept in the stream entry (field tp)

  Returns  as reserve-idempotent.lua, plus -9 the admission bought its order already (or was
           replaced), -10 it is not valid yet, -11 it lapsed, -12 the room is not in Redis.
]]
-- @include reserve-core.lua
-- @include idempotency.lua
-- @include room/lua/admission.lua
local idem = nil
if ARGV[5] ~= '' then
  idem = ARGV[5]
  local previous = previousOrder(KEYS[7], ARGV[2])
  if previous then
    return previous
  end
end
local refusal = admissionRefusal(KEYS[8], KEYS[9], KEYS[10], ARGV[1], ARGV[6])
if refusal then
  return refusal
end
local result = reserve(KEYS[1], KEYS[2], KEYS[3], KEYS[6], KEYS[4], KEYS[5], ARGV[1], ARGV[2], ARGV[3], idem, ARGV[7])
if result == 1 then
  spendAdmission(KEYS[9], KEYS[10], KEYS[11], ARGV[1], ARGV[6])
  if idem then
    redis.call('set', KEYS[7], ARGV[3] .. ':' .. ARGV[2], 'EX', ARGV[4])
  end
elseif type(result) == 'table' or result == -7 then
  -- Sold out: the buyer is done for now and frees its active slot (the admission stays valid, should
  -- units come back), so a full room never waits for the lapse of buyers who found nothing to buy.
  redis.call('zrem', KEYS[11], ARGV[1])
end
return result

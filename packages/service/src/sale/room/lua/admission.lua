--[[
  Fragment (included by reserve-admitted.lua and spend.lua): a waiting room's admission, checked and
  spent on the Redis clock, so every serve process agrees on when it is valid and that it was used.

  admissionRefusal(config, admitted, spent, user, admittedAt) — `config` is the room's config key;
  `admitted` and `spent` the room's hashes (room/keys.ts); `admittedAt` the admitted-at the signed
  admission carries. Returns nil when the admission may buy now, else -9 it bought its order already
  (or a newer admission replaced it: join again), -10 not valid yet (its notice period), -11 lapsed,
  -12 the room is gone from Redis (a 503: never sold without it).

  spendAdmission(admitted, spent, active, user, admittedAt) marks it spent and frees its active slot.
]]
local function admissionRefusal(config, admitted, spent, user, admittedAt)
  local room = redis.call('hmget', config, 'admitMs', 'noticeMs')
  if not room[1] then return -12 end
  if redis.call('hget', admitted, user) ~= admittedAt or redis.call('hget', spent, user) == admittedAt then
    return -9
  end
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local at = tonumber(admittedAt)
  if now < at + tonumber(room[2] or '0') then return -10 end
  if now >= at + tonumber(room[1]) then return -11 end
  return nil
end

local function spendAdmission(admitted, spent, active, user, admittedAt)
  redis.call('hset', spent, user, admittedAt)
  redis.call('zrem', active, user)
end

--[[
  Fragment (included by user-rate.lua and reserve-limited.lua): the per-user rate limit, a fixed
  window of one second on the Redis clock. Every attempt counts, refused or not (as the window
  limiters of @fastify/rate-limit count): a client that keeps hammering stays refused until it pauses.
  The counter is the window: it expires a second after the window's first attempt.

  Returns nil when the attempt is within the limit; else the milliseconds until the window ends.
]]
local function rate_limited(counter, max_arg)
  local attempts = redis.call('incr', counter)
  if attempts == 1 then
    redis.call('pexpire', counter, 1000)
  end
  if attempts > tonumber(max_arg) then
    local ttl = redis.call('pttl', counter)
    if ttl < 0 then
      -- A counter without its expiry (written by something else): start its window now.
      redis.call('pexpire', counter, 1000)
      ttl = 1000
    end
    return ttl
  end
  return nil
end

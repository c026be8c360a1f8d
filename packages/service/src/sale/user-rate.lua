--[[
  Counts one attempt of a user against the per-user rate limit (user-rate-core.lua), for the paths
  whose reservation is not reserve-limited.lua (an Idempotency-Key, an admission, a split sale, the
  waitlist). It is on the sale's hash tag, like the reservation's own copy of the check.

  KEYS[1]  the user's attempt counter on the sale (SaleKeys.userRate)
  ARGV[1]  attempts allowed per second (integer >= 1)

  Returns  0 within the limit; {-13, ms until the window ends} over it.
]]
-- @include user-rate-core.lua
local ttl = rate_limited(KEYS[1], ARGV[1])
if ttl then
  return { -13, ttl }
end
return 0

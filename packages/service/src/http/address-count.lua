--[[
  The per-address rate limit's shared counter of one window (http/address-limit.ts): a process adds
  the requests it admitted from the address since its last reconciliation and learns the total of
  every process.

  KEYS[1]  the counter: <prefix>:rl:ip:<address>:<window, epoch seconds>
  ARGV[1]  requests to add (integer >= 1)
  ARGV[2]  the counter's lifetime, ms (beyond its window, so late reconciliations still find it)

  Returns  the total admitted in the window by every process.
]]
local total = redis.call('incrby', KEYS[1], ARGV[1])
if total == tonumber(ARGV[1]) then
  redis.call('pexpire', KEYS[1], ARGV[2])
end
return total

--[[
  Takes or keeps the lease of the serve process that exposes the per-sale gauges. Every serve reads
  the sales (the reading is also its probe of Redis and the record), but only the lease holder shows
  the per-sale series on /metrics, so each sale has one series however many serves are scraped:
  sum() does not double a sale's units left, and each sale alert fires once (issue 47).

  KEYS[1]  the lease key: a string holding the holder's instance id
  ARGV[1]  instance id of the caller
  ARGV[2]  lease in milliseconds

  Returns  1 the caller holds the lease (taken or renewed); 0 another instance holds it.
]]
local holder = redis.call('get', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2])
  return 1
end
return 0

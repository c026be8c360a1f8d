--[[
  Starts rebuilding a sale: from now on every script that sells, settles or expires its orders
  refuses (they read the flag first), so the sale's Redis state stands still while it is read and
  rewritten. The caller holds the sale's recovery lock; the token (its owner and fencing token) fences
  every later step: a step whose token is no longer the flag's (the lock was lost and someone else
  took over, or Redis lost the flag) changes nothing.

  KEYS[1]  recovering
  ARGV[1]  token of this rebuild

  Returns  1
]]
redis.call('set', KEYS[1], ARGV[1])
return 1

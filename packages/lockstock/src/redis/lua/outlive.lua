--[[
  Fragment (included with `-- @include outlive.lua`): a key that holds several leases expires with
  the longest of them.
]]

-- `key` (which exists) lives at least `ms` more: a key without an expiry gets one (NX), one expiring
-- sooner is pushed back (GT), one that outlives it already is left alone. A new key costs one call.
local function outlive(key, ms)
  if redis.call('pexpire', key, ms, 'NX') == 0 then
    redis.call('pexpire', key, ms, 'GT')
  end
end

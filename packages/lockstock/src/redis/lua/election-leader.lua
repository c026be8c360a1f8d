--[[
  Reads who leads an election: the holder of its mutex and that holder's fencing token, in one step
  (read apart, a new term could slip in between and pair one leader with another's token).

  KEYS[1]  the election's mutex key: string holding the leader's owner id (or a turn marker)
  KEYS[2]  its fencing counter: the last token issued, which is the holder's while it holds
  returns  {owner, token} when someone leads; nil otherwise
]]
local owner = redis.call('GET', KEYS[1])
if not owner or string.byte(owner, 1) == 0 then
  return nil
end
return { owner, tonumber(redis.call('GET', KEYS[2]) or '0') }

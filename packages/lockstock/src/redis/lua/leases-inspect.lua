--[[
  How many holders of a lease set are alive, the longest remaining lease, and who they are (semaphores).

  KEYS[1]  leases: zset {owner: lease end, ms on Redis's clock; turn markers '\0turn:<client id>'}

  Returns  {live holders, longest remaining lease in ms (0 when none), owner, owner, ...}: the count
           includes permits reserved for a client's turn (they are in use); the owners listed are the
           live holders only, without the turn markers. Changes nothing.
]]
local t = redis.call('time')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local members = redis.call('zrangebyscore', KEYS[1], '(' .. now, '+inf', 'WITHSCORES')
local reply = { #members / 2, 0 }
if #members > 0 then
  reply[2] = tonumber(members[#members]) - now
end
for i = 1, #members, 2 do
  if string.byte(members[i], 1) ~= 0 then
    reply[#reply + 1] = members[i]
  end
end
return reply

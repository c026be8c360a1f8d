--[[
  Fragment (included by stats.lua and gauges.lua): the order pipeline's backlog on one stream.

  stream_backlog(stream, group) returns pending (delivered, not acknowledged), undelivered (not read
  yet; counted up to 10,000 when Redis cannot tell the lag, after deletions) and the id of the oldest
  unrecorded entry ('' if none); 0, 0, '' without the stream.
]]
local function stream_backlog(stream, group)
  if redis.call('exists', stream) == 0 then
    return 0, 0, ''
  end
  local last, lag, pending = '0-0', false, 0
  for _, g in ipairs(redis.call('xinfo', 'groups', stream)) do
    local fields = {}
    for i = 1, #g, 2 do
      fields[g[i]] = g[i + 1]
    end
    if fields['name'] == group then
      pending = fields['pending']
      last = fields['last-delivered-id']
      lag = fields['lag']
    end
  end
  local first_new = redis.call('xrange', stream, '(' .. last, '+', 'COUNT', 1)[1]
  local undelivered = 0
  if lag then
    undelivered = lag
  elseif first_new then
    undelivered = #redis.call('xrange', stream, '(' .. last, '+', 'COUNT', 10000)
  end
  local oldest = ''
  if pending > 0 then
    oldest = redis.call('xpending', stream, group)[2]
  elseif first_new then
    oldest = first_new[1]
  end
  return pending, undelivered, oldest
end

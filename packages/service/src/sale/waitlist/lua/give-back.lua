--[[
  Fragment (included by lifecycle/settle-core.lua and the waitlist's scripts): units that come back to
  a first-come sale (a cancellation, an expiry, an offer that lapsed) go to its waitlist first, in join
  order, instead of to whoever refreshes fastest.

  `stock` is the sale's stock key; `wl` a table of the sale's other keys and the offer's terms (nil:
  no waitlist, e.g. a split sale's part: every unit goes to the stock, as before):
    wl.open, wl.buyers             the sale's keys (keys.ts)
    wl.waitlist                    sorted set {buyer: join sequence}
    wl.offers                      sorted set {buyer: when the offer ends, ms on the Redis clock}
    wl.now                         ms, Redis clock
    wl.offer_ms                    how long an offer holds its unit, ms
    wl.limit                       optional: the per-user limit, for a rebuild (before `open` is back)

  give_back(stock, wl, quantity): each unit becomes an offer to the head of the waitlist, held apart from the
    stock (ZADD offers); a head who cannot take it (at the per-user limit by now, or holding an offer
    already) leaves the line. Units nobody is waiting for, or of a sale that has ended (no `open`),
    go to the stock. Returns the units that went to the stock (the caller tells the sold-out caches).

  lapse_offers(stock, wl, max): at most `max` offers whose end has passed give their unit back (give_back),
    so it goes to the next in line. Returns the offers lapsed and the units that went to the stock.

  One unit per offer, one offer per buyer at a time: a line of buyers each hoping for a ticket.
]]
local function give_back(stock, wl, quantity)
  local offered = 0
  if wl then
    local limit = wl.limit or redis.call('get', wl.open)
    if limit then
      limit = tonumber(limit)
      while offered < quantity do
        local head = redis.call('zpopmin', wl.waitlist)
        if #head == 0 then
          break
        end
        local user = head[1]
        if tonumber(redis.call('hget', wl.buyers, user) or '0') < limit and not redis.call('zscore', wl.offers, user) then
          redis.call('zadd', wl.offers, wl.now + wl.offer_ms, user)
          offered = offered + 1
        end
      end
    end
  end
  if quantity > offered then
    redis.call('incrby', stock, quantity - offered)
  end
  return quantity - offered
end

local function lapse_offers(stock, wl, max)
  local due = redis.call('zrangebyscore', wl.offers, '-inf', wl.now, 'LIMIT', 0, max)
  local to_stock = 0
  for _, user in ipairs(due) do
    redis.call('zrem', wl.offers, user)
    to_stock = to_stock + give_back(stock, wl, 1)
  end
  return #due, to_stock
end

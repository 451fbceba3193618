-- A sale's public figures, read only: the live sale page's queue and the
-- final report's fairness figures. Nothing moves (sale_me.lua moves the
-- serving counter).
--
-- KEYS: the sale's keys (keys.go order)
--
-- Returns {state, entrants, ranked, serving, outstanding, spent, opens_at_ms,
-- capacity}:
-- entrants ranked by the shuffle, everyone ranked (entrants and later
-- arrivals), the highest rank a pass was issued to, the passes issued and
-- neither spent nor expired (Redis's clock), the passes spent, and the
-- live placement capacity (sale_me.lua's sum, read without removing the
-- dead fields). state '' is no sale.
local state, entrants, opens = unpack(redis.call('HMGET', KEYS[1], 'state', 'entrants', 'opens_at'))
if not state then
  return {'', 0, 0, 0, 0, 0, 0, 0}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- Before the freeze (a sale closed before it opened too) the queue is
-- whoever entered; from it on, the entrants and the later arrivals.
local queued = redis.call('HLEN', KEYS[4])
if entrants then
  queued = tonumber(entrants) + tonumber(redis.call('GET', KEYS[5]) or '0')
end
entrants = tonumber(entrants or '0')
local capacity = 0
local published = redis.call('HGETALL', KEYS[10])
for i = 1, #published, 2 do
  local units, expiry = string.match(published[i + 1], '^(%d+):(%d+)$')
  if units and tonumber(expiry) > now then
    capacity = capacity + tonumber(units)
  end
end
-- A spent pass stays in KEYS[8] while its order is placed (sale_settle.lua)
-- but is no longer out: count only those not spent (at most the capacity
-- of them are in the set).
local outstanding = 0
for _, rank in ipairs(redis.call('ZRANGEBYSCORE', KEYS[8], '(' .. now, '+inf')) do
  if redis.call('HEXISTS', KEYS[9], rank) == 0 then
    outstanding = outstanding + 1
  end
end
return {state, entrants, queued, tonumber(redis.call('GET', KEYS[7]) or '0'),
  outstanding, redis.call('HLEN', KEYS[9]), tonumber(opens or '0'), capacity}

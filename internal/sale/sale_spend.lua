-- Spends a pass on an order, once. The same order again (a retried buy)
-- is answered as the first time; any other order is a replay. The pass
-- stays among the outstanding ones until the order's answer settles it
-- (sale_settle.lua): its unit is still in the buckets meanwhile.
--
-- KEYS: the sale's keys (keys.go order)
-- ARGV[1] rank
-- ARGV[2] the pass's expiry (ms), as signed
-- ARGV[3] order id
-- ARGV[4] the sale id the pass names ('' checks none)
--
-- A resume moves the expiry of the passes outstanding at the pause on by
-- the pause's length (sale_state.lua), so the pass's expiry here may be
-- later than the signed one, never earlier; the sale id keeps a pass of
-- the SKU's previous sale (same rank, earlier expiry) out.
--
-- The sale's closes_at (ms), when set, is its end by this Redis's clock:
-- every API instance spends here, so none sells past it, whenever the
-- workflow's timer writes CLOSED.
--
-- Returns 'OK', 'REPEAT', 'USED', 'EXPIRED', 'FOREIGN' (another sale's), or the sale's state when it
-- is not OPEN ('' when there is no sale; 'CLOSED' from closes_at on).
if ARGV[4] ~= '' and redis.call('HGET', KEYS[1], 'sale_id') ~= ARGV[4] then
  return 'FOREIGN'
end
local by = redis.call('HGET', KEYS[9], ARGV[1])
if by == ARGV[3] then
  return 'REPEAT'
end
if by then
  return 'USED'
end
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= 'OPEN' then
  return state or ''
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local closes_at = tonumber(redis.call('HGET', KEYS[1], 'closes_at') or 0)
if closes_at > 0 and now >= closes_at then
  return 'CLOSED'
end
local expiry = redis.call('ZSCORE', KEYS[8], ARGV[1])
if not expiry or tonumber(expiry) < tonumber(ARGV[2]) or tonumber(expiry) <= now then
  return 'EXPIRED'
end
redis.call('HSET', KEYS[9], ARGV[1], ARGV[3])
return 'OK'

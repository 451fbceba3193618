-- Spends a pass on an order, once. The same order again (a retried buy)
-- is answered as the first time; any other order is a replay. The pass
-- stays among the outstanding ones until the order's answer settles it
-- (sale_settle.lua): its unit is still in the buckets meanwhile.
--
-- KEYS: the sale's keys (keys.go order)
-- ARGV[1] rank
-- ARGV[2] the pass's expiry (ms), as signed
-- ARGV[3] order id
--
-- Returns 'OK', 'REPEAT', 'USED', 'EXPIRED', or the sale's state when it
-- is not OPEN ('' when there is no sale).
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
local expiry = redis.call('ZSCORE', KEYS[8], ARGV[1])
if not expiry or tonumber(expiry) ~= tonumber(ARGV[2]) or tonumber(expiry) <= now then
  return 'EXPIRED'
end
redis.call('HSET', KEYS[9], ARGV[1], ARGV[3])
return 'OK'

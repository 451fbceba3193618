-- unbook.lua: give an order's booking back (book.lua), once.
--
-- KEYS[1] bookings left      fs:{sku:<sku>}:bookings
-- KEYS[2] order's booking    fs:{sku:<sku>}:booking:<orderID>
-- ARGV[1] tombstone TTL in ms
--
-- Returns the units given back: 0 on a repeat, or for an order that
-- booked nothing (a tombstone then keeps a late book.lua from booking).
-- Bookings come back only while the SKU still takes them (KEYS[1] there):
-- a new sale (a preheat) set its own count.

local marker = redis.call('GET', KEYS[2])
if not marker then
  redis.call('SET', KEYS[2], 'r0', 'PX', ARGV[1])
  return 0
end
if string.sub(marker, 1, 1) == 'r' then
  return 0
end
local k = tonumber(marker)
redis.call('SET', KEYS[2], 'r' .. marker, 'KEEPTTL')
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('INCRBY', KEYS[1], k)
end
return k

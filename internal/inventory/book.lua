-- book.lua: take a booking of a SKU that deducts at payment, for one order.
--
-- KEYS[1] bookings left      fs:{sku:<sku>}:bookings  (absent: the SKU
--                            deducts when the order is placed)
-- KEYS[2] order's booking    fs:{sku:<sku>}:booking:<orderID>
-- ARGV[1] units the order wants (> 0)
-- ARGV[2] marker TTL in ms (the held markers')
--
-- Returns -1 when the SKU takes no bookings (KEYS[1] absent), 0 when too
-- few bookings are left, -2 when the order's booking was given back
-- already, else the units booked. A retry replays the first answer: the
-- marker holds it, so a booking is taken once per order.

local marker = redis.call('GET', KEYS[2])
if marker then
  if string.sub(marker, 1, 1) == 'r' then
    return -2
  end
  return tonumber(marker)
end
local left = redis.call('GET', KEYS[1])
if not left then
  return -1
end
local want = tonumber(ARGV[1])
if not want or want <= 0 then
  return redis.error_reply('ERR book.lua: units must be a positive integer')
end
if tonumber(left) < want then
  return 0
end
redis.call('DECRBY', KEYS[1], want)
redis.call('SET', KEYS[2], tostring(want), 'PX', ARGV[2])
return want

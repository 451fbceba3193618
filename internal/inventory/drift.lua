-- drift.lua: count units Redis handed out that MySQL refused, once per order.
--
-- KEYS[1] drift counter   fs:{sku:<sku>}:drift
-- KEYS[2] order's record  fs:{sku:<sku>}:drift:<orderID>
-- ARGV[1] units (> 0)
-- ARGV[2] record TTL in ms
--
-- Returns 1 when counted now, 0 when this order was counted before (a
-- retried activity). Both keys share the SKU's hash tag: one atomic step.
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('INCRBY', KEYS[1], ARGV[1])
  return 1
end
return 0

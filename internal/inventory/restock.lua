-- restock.lua: add units to one bucket once per restock request.
--
-- KEYS[1] bucket stock        fs:{sku:<sku>:b<i>}:stock
-- KEYS[2] restock marker      fs:{sku:<sku>:b<i>}:restock:<requestID>
-- ARGV[1] units to add (> 0)
-- ARGV[2] marker TTL in ms
--
-- Returns 1 if the units were added now, 0 if this request already ran.
--
-- The marker and the INCRBY are one atomic step in one slot: a retried
-- restock request (admin re-click, job retry) must never add stock twice.
if redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
local qty = tonumber(ARGV[1])
-- A non-positive restock would silently take stock away.
if not qty or qty <= 0 then
  return redis.error_reply('ERR restock.lua: qty must be a positive integer')
end
redis.call('INCRBY', KEYS[1], qty)
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return 1

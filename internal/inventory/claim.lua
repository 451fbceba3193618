-- claim.lua: let exactly one reconciliation act on one observation.
--
-- KEYS[1] reconcile fence     fs:{sku:<sku>}:reconcile:fence
-- KEYS[2] claim marker        fs:{sku:<sku>}:reconcile:claim:<correctionID>
-- ARGV[1] fence value the two observations behind the correction both read
-- ARGV[2] marker TTL in ms
--
-- Returns 1 if this correction owns the observation (now or on an earlier
-- attempt), 0 if another correction (or a restore) moved the fence first.
--
-- Two reconcile runs (the schedule and a manual "reconcile now") may see
-- the same stable drift; only the first to claim may correct it, otherwise
-- the drift would be corrected twice. Bumping the fence also makes every
-- observation taken before this point stale for the other runs.
if redis.call('EXISTS', KEYS[2]) == 1 then
  return 1
end
local fence = redis.call('GET', KEYS[1]) or '0'
if fence ~= ARGV[1] then
  return 0
end
redis.call('INCR', KEYS[1])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return 1

-- adjust.lua: move one bucket by a reconciliation correction, once.
--
-- KEYS[1] bucket stock        fs:{sku:<sku>:b<i>}:stock
-- KEYS[2] adjustment marker   fs:{sku:<sku>:b<i>}:adjust:<correctionID>
-- ARGV[1] units: > 0 adds, < 0 removes up to that many
-- ARGV[2] marker TTL in ms
--
-- Returns the units actually moved (negative when removed).
--
-- The correction is relative (INCRBY/DECRBY), never a SET of a total read
-- earlier: takes and releases that run between the reconciler's reads and
-- this script keep their effect. The marker makes a retried correction
-- activity a replay instead of a second move; it lives in the bucket's slot
-- so check-and-move is one atomic step even on Redis Cluster.
local done = redis.call('GET', KEYS[2])
if done then
  return tonumber(done)
end
local delta = tonumber(ARGV[1])
if not delta or delta == 0 or delta ~= math.floor(delta) then
  return redis.error_reply('ERR adjust.lua: units must be a non-zero integer')
end
local stock = tonumber(redis.call('GET', KEYS[1]) or '0')
local moved
if delta > 0 then
  if stock < 0 then
    -- A negative bucket (tampering) holds nothing for take.lua; the drift
    -- was measured on usable units, so first bring it to zero. This is
    -- still relative to the value read in this same atomic step.
    redis.call('INCRBY', KEYS[1], -stock)
  end
  redis.call('INCRBY', KEYS[1], delta)
  moved = delta
else
  -- Never below zero: units a buyer took meanwhile are not ours to remove.
  local take = math.min(math.max(stock, 0), -delta)
  if take > 0 then
    redis.call('DECRBY', KEYS[1], take)
  end
  moved = -take
end
redis.call('SET', KEYS[2], tostring(moved), 'PX', ARGV[2])
return moved

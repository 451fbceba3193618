-- soldout.lua: set the sold-out flag unless stock came back meanwhile.
--
-- KEYS[1] generation          fs:{sku:<sku>}:gen
-- KEYS[2] sold-out flag       fs:{sku:<sku>}:soldout
-- ARGV[1] generation the caller read BEFORE it probed the buckets
-- ARGV[2] flag TTL in ms
--
-- Returns 1 if the flag was set, 0 if the observation was stale.
--
-- Every stock increase bumps gen after the units are back (bump.lua). If gen
-- moved since the caller read it, units may have arrived in a bucket the
-- caller had already probed, so its "everything is empty" is stale; setting
-- the flag now would hide that stock from every buyer for the whole TTL. A
-- flag set just before a bump is fine: bump.lua deletes it.
local gen = redis.call('GET', KEYS[1]) or '0'
if gen ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
return 1

-- movein.lua: step 2 of a move: add the units moveout.lua took, once.
--
-- KEYS[1] destination stock   fs:{sku:<sku>:b<j>}:stock
-- KEYS[2] move-in marker      fs:{sku:<sku>:b<j>}:movein:<moveID>
-- ARGV[1] units (> 0), exactly what moveout.lua returned
-- ARGV[2] marker TTL in ms
--
-- Returns 1 if the units were added now, 0 if this move id already landed.
--
-- The marker and the INCRBY are one atomic step in the destination's slot,
-- so finishing a half-done move any number of times adds the units once.
if redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
local k = tonumber(ARGV[1])
if not k or k <= 0 or k ~= math.floor(k) then
  return redis.error_reply('ERR movein.lua: units must be a positive integer')
end
redis.call('INCRBY', KEYS[1], k)
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return 1

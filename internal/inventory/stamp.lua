-- stamp.lua: raise one bucket's copy of the layout epoch.
--
-- KEYS[1] bucket stamp        fs:{sku:<sku>:b<i>}:layout
-- ARGV[1] the epoch the SKU's layout is about to move to
--
-- Returns 1 if the stamp was raised, 0 if it already was at least ARGV[1].
--
-- Never lowers the stamp: a slow stamp of an older Resize (one that
-- outlived its lock) landing after a newer one must not reopen the bucket
-- to takes under the older layout.
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local e = tonumber(ARGV[1])
if not e or e <= 0 or e ~= math.floor(e) then
  return redis.error_reply('ERR stamp.lua: epoch must be a positive integer')
end
if cur >= e then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1])
return 1

-- unlock.lua: release a lock only if this holder still owns it.
--
-- KEYS[1] lock                fs:{sku:<sku>}:resize:lock
-- ARGV[1] the holder's token
--
-- Returns 1 if deleted. A holder whose lock expired (it ran past the TTL)
-- must not delete the lock the next holder took.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0

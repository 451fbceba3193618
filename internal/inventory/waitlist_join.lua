-- waitlist_join.lua: put a user at the end of a SKU's waitlist, once, while
-- the list has room.
--
-- KEYS[1] FIFO list of user ids   fs:{sku:<sku>}:waitlist
-- KEYS[2] set of waiting users    fs:{sku:<sku>}:waitlist:users
-- ARGV[1] user id
-- ARGV[2] TTL in ms of both keys (a waitlist outlives no sale by much)
-- ARGV[3] capacity: the most users that may wait at once
--
-- Returns {position (1-based), joined now (1) or already waiting (0)}, or
-- {-1, 0} when the list is full and the user is not on it.
--
-- Both keys share the SKU's hash tag, so the membership check, the length
-- check and the push are one atomic step: a double click cannot queue a
-- user twice, and a flood of joins cannot push the list past its capacity.

if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then
  local pos = redis.call('LPOS', KEYS[1], ARGV[1])
  if pos then
    return {pos + 1, 0}
  end
  -- The set and the list disagree (a pop interrupted by a failover that
  -- lost one of the writes): repair by queueing the user again.
end
if redis.call('LLEN', KEYS[1]) >= tonumber(ARGV[3]) then
  return {-1, 0}
end
redis.call('SADD', KEYS[2], ARGV[1])
local n = redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return {n, 1}

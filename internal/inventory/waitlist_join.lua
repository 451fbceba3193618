-- waitlist_join.lua: put a user on a SKU's waitlist, once, while it has
-- room: at the end of the FIFO list, or, for a buyer of a fair sale's queue,
-- at their rank in the ranked set, so a sale's waitlist is served in rank
-- order whenever its buyers join (docs/design/fair-sale.md).
--
-- KEYS[1] FIFO list of user ids   fs:{sku:<sku>}:waitlist
-- KEYS[2] set of waiting users    fs:{sku:<sku>}:waitlist:users
-- KEYS[3] ranked waiting users    fs:{sku:<sku>}:waitlist:ranked (zset: user -> rank)
-- ARGV[1] user id
-- ARGV[2] TTL in ms of the keys (a waitlist outlives no sale by much)
-- ARGV[3] capacity: the most users that may wait at once
-- ARGV[4] the user's rank in the SKU's fair sale, 0 for a SKU without one
--
-- Returns {position (1-based), joined now (1) or already waiting (0)}, or
-- {-1, 0} when the waitlist is full and the user is not on it. The ranked
-- set is served before the list (pop), so a list member's position counts
-- it.
--
-- The keys share the SKU's hash tag, so the membership check, the length
-- check and the insert are one atomic step: a double click cannot queue a
-- user twice, and a flood of joins cannot push the waitlist past its
-- capacity.

local user, rank = ARGV[1], tonumber(ARGV[4])
if redis.call('SISMEMBER', KEYS[2], user) == 1 then
  local r = redis.call('ZRANK', KEYS[3], user)
  if r then
    return {r + 1, 0}
  end
  local pos = redis.call('LPOS', KEYS[1], user)
  if pos then
    return {redis.call('ZCARD', KEYS[3]) + pos + 1, 0}
  end
  -- The set and the waitlist disagree (a pop interrupted by a failover
  -- that lost one of the writes): repair by queueing the user again.
end
if redis.call('LLEN', KEYS[1]) + redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[3]) then
  return {-1, 0}
end
redis.call('SADD', KEYS[2], user)
redis.call('PEXPIRE', KEYS[2], ARGV[2])
if rank > 0 then
  redis.call('ZADD', KEYS[3], rank, user)
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
  return {redis.call('ZRANK', KEYS[3], user) + 1, 1}
end
local n = redis.call('RPUSH', KEYS[1], user)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {redis.call('ZCARD', KEYS[3]) + n, 1}

-- limit_take.lua: count an order's units against its buyer's limit for the
-- SKU, before any bucket is touched.
--
-- KEYS[1] the sale's limit    fs:{sku:<sku>}:limit           "<limit>:<sale>"
-- KEYS[2] the buyer's count   fs:{sku:<sku>}:held:<user>     "<sale>:<units>"
-- KEYS[3] the order's claim   fs:{sku:<sku>}:claim:<order>   "<h|r|s><units>:<sale>:<user>"
-- ARGV[1] user id
-- ARGV[2] units wanted (> 0)
-- ARGV[3] TTL in ms of the count and the claim (the held markers' TTL)
-- ARGV[4] "1" to count past the limit: a waitlist hand-over, whose unit is
--         already the order's; MySQL's refusal then passes the unit on to
--         the next waiting buyer instead of this script dropping it
--
-- Returns
--   {0, held, limit}   counted now: with this order the buyer holds held units
--   {1, held, limit}   replay: this order was counted before, nothing added
--   {2, 0, 0}          nothing counted: the SKU has no limit in Redis (not
--                      defined by a PUT since this key exists), or the
--                      order's claim was given back already (its bucket
--                      markers then give the order's answer)
--   {-1, held, limit}  refused: held + wanted would exceed the limit (never
--                      with ARGV[4] = "1")
--
-- All keys share the SKU's hash tag, so check-and-count is one atomic step:
-- two orders of one buyer racing through different API instances and
-- different buckets cannot both pass.

local wanted = tonumber(ARGV[2])
if not wanted or wanted <= 0 then
  return redis.error_reply('ERR limit_take.lua: wanted must be a positive integer')
end

local lim = redis.call('GET', KEYS[1])
local limit, sale
if lim then
  limit, sale = string.match(lim, '^(%d+):(%d+)$')
end

-- The buyer's units in the current sale; a count left from an earlier sale
-- (the SKU was PUT again since) is not this sale's.
local function held()
  local v = redis.call('GET', KEYS[2])
  if not v or not sale then return 0 end
  local s, n = string.match(v, '^(%d+):(%d+)$')
  if s ~= sale then return 0 end
  return tonumber(n)
end

local claim = redis.call('GET', KEYS[3])
if claim then
  local state, user = string.match(claim, '^(%a)%d+:%d*:(.*)$')
  if state == 'h' then
    if user ~= ARGV[1] then
      -- Order ids are the buyer's own (the edge's placed marker, the
      -- workflow id); another buyer's claim is a caller bug.
      return redis.error_reply('ERR limit_take.lua: order counted for another user')
    end
    return {1, held(), tonumber(limit or '0')}
  end
  return {2, 0, 0}
end

if not limit then
  -- No limit known to Redis: MySQL's check alone decides.
  return {2, 0, 0}
end
limit = tonumber(limit)

local n = held()
if n + wanted > limit and ARGV[4] ~= '1' then
  return {-1, n, limit}
end
n = n + wanted
-- The count's TTL restarts with every order, so it outlives the claims
-- that decrement it; paid units stay counted that long (MySQL counts them
-- for the whole sale).
redis.call('SET', KEYS[2], sale .. ':' .. n, 'PX', ARGV[3])
redis.call('SET', KEYS[3], 'h' .. wanted .. ':' .. sale .. ':' .. ARGV[1], 'PX', ARGV[3])
return {0, n, limit}

-- take.lua: take up to ARGV[1] units from one bucket for one order.
--
-- KEYS[1] bucket stock        fs:{sku:<sku>:b<i>}:stock
-- KEYS[2] order marker        fs:{sku:<sku>:b<i>}:order:<orderID>
-- ARGV[1] units still wanted (> 0)
-- ARGV[2] marker TTL in ms when units were taken (held)
-- ARGV[3] marker TTL in ms when nothing was taken (zero)
-- KEYS[3] layout stamp        fs:{sku:<sku>:b<i>}:layout   (optional)
-- ARGV[4] layout epoch the caller cached, or absent / '' when the caller
--         read the layout itself just before this call (no check)
--
-- Returns
--   {-4, stamp}           stale layout: the bucket's stamp is not ARGV[4];
--                         nothing was read or written
--   {take, remaining, 0}  fresh probe: take units moved, remaining left
--   {k, remaining, 1}     replay: the marker already holds the first answer
--   {-2, k}               the order was released (Release ran before/while)
--   {-3, k}               the order already ended sold out and gave back k
--
-- Both keys share the bucket's hash tag, so the check-and-take below is one
-- atomic step even on Redis Cluster.

-- A cached layout is checked first, before a replay: a stale layout may
-- have led the caller to the wrong bucket, where even a replayed answer
-- would be the wrong one. Resize and Preheat stamp every bucket with the
-- new epoch before the epoch itself moves (layoutcache.go), so a stamp
-- equal to the caller's epoch means the layout is still the cached one at
-- this moment.
if ARGV[4] and ARGV[4] ~= '' then
  local stamp = redis.call('GET', KEYS[3]) or '0'
  if stamp ~= ARGV[4] then
    return {-4, tonumber(stamp)}
  end
end

local marker = redis.call('GET', KEYS[2])
if marker then
  -- A marker means this order already probed this bucket. Answer exactly as
  -- the first time instead of taking again: this is what makes a retried
  -- Reserve (Temporal activity retry, client timeout) move stock only once.
  local kind = string.sub(marker, 1, 1)
  if kind == 'r' then
    -- Released: taking now would resurrect a cancelled order and leak
    -- units nobody will ever release.
    return {-2, tonumber(string.sub(marker, 2))}
  end
  if kind == 's' then
    -- The first attempt ended sold out and gave its units back; repeat that
    -- answer so a retry does not turn it into a different outcome.
    return {-3, tonumber(string.sub(marker, 2))}
  end
  return {tonumber(marker), tonumber(redis.call('GET', KEYS[1]) or '0'), 1}
end

local wanted = tonumber(ARGV[1])
-- Guard against a caller bug: a non-positive request would INCR the stock.
if not wanted or wanted <= 0 then
  return redis.error_reply('ERR take.lua: wanted must be a positive integer')
end

-- A missing stock key counts as an empty bucket rather than an error: the
-- caller probes every bucket and only the total decides sold out. A negative
-- value can only come from outside tampering; never let it go lower.
local stock = tonumber(redis.call('GET', KEYS[1]) or '0')
if stock < 0 then stock = 0 end

local take = math.min(stock, wanted)
local remaining = stock
if take > 0 then
  remaining = redis.call('DECRBY', KEYS[1], take)
  redis.call('SET', KEYS[2], tostring(take), 'PX', ARGV[2])
else
  -- Remember "nothing here" too, with a shorter TTL, so a replay walks the
  -- buckets exactly like the first attempt and ends on the same answer even
  -- if this bucket is refilled in between.
  redis.call('SET', KEYS[2], '0', 'PX', ARGV[3])
end
return {take, remaining, 0}

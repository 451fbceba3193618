-- release.lua: give back what one order took from one bucket.
--
-- KEYS[1] bucket stock        fs:{sku:<sku>:b<i>}:stock
-- KEYS[2] order marker        fs:{sku:<sku>:b<i>}:order:<orderID>
-- ARGV[1] mode: 'r' = Release (the order is cancelled / failed downstream),
--               's' = Reserve gave up because the order could not be served
-- ARGV[2] tombstone TTL in ms (mode 'r' only)
--
-- Returns
--   {0, 0}  nothing was held here
--   {1, k}  k units returned to this bucket now
--   {2, k}  already given back earlier (k units then); nothing moved now
--
-- Both keys share the bucket's hash tag, so check-and-give-back is atomic.

local mode = ARGV[1]
-- Only the two known modes may be written into markers; anything else would
-- create a marker take.lua would misread as a held quantity.
if mode ~= 'r' and mode ~= 's' then
  return redis.error_reply('ERR release.lua: mode must be r or s')
end

local marker = redis.call('GET', KEYS[2])
if not marker then
  if mode == 'r' then
    -- Nothing held, but leave a tombstone: a Reserve attempt of the same
    -- order that is still in flight (an abandoned activity retry) must not
    -- take units after the order was released, or they would leak.
    redis.call('SET', KEYS[2], 'r0', 'PX', ARGV[2])
  end
  return {0, 0}
end

local kind = string.sub(marker, 1, 1)
if kind == 'r' or kind == 's' then
  -- Already given back: returning the units again would create stock.
  return {2, tonumber(string.sub(marker, 2))}
end

local k = tonumber(marker)
if k > 0 then
  redis.call('INCRBY', KEYS[1], k)
  -- KEEPTTL: the marker must outlive any retry of the original take, and it
  -- already carries the held TTL set when the units were taken.
  redis.call('SET', KEYS[2], mode .. k, 'KEEPTTL')
  return {1, k}
end

-- k == 0: probed, nothing taken. Close the bucket for this order the same way.
if mode == 'r' then
  -- Extend to the tombstone TTL: the zero marker's short TTL would reopen
  -- the bucket to a late Reserve attempt.
  redis.call('SET', KEYS[2], 'r0', 'PX', ARGV[2])
else
  redis.call('SET', KEYS[2], 's0', 'KEEPTTL')
end
return {0, 0}

-- transfer.lua: hand the units one order holds in a bucket to another order,
-- moving no stock.
--
-- KEYS[1] marker of the giving order      fs:{sku:<sku>:b<i>}:order:<from>
-- KEYS[2] marker of the receiving order   fs:{sku:<sku>:b<i>}:order:<to>
-- ARGV[1] marker TTL in ms (held)
--
-- Returns
--   {0, 0}  the giving order holds nothing here; nothing moved
--   {1, k}  k units now belong to the receiving order
--   {2, k}  replay: the receiving order already holds k units here
--   {-2, k} the receiving order was released already (k units then)
--
-- Both markers live in the bucket's slot (the hash tag is the bucket's, the
-- order ids come after it), so the hand-over is atomic and the bucket's
-- stock key is never touched: the units are never visible to open sale
-- between the two orders. The giving marker becomes "r<k>", exactly what
-- release.lua leaves, so a late Release or Reserve of the giving order
-- treats its units as given back and moves nothing.

local to = redis.call('GET', KEYS[2])
if to then
  local kind = string.sub(to, 1, 1)
  if kind == 'r' or kind == 's' then
    return {-2, tonumber(string.sub(to, 2))}
  end
  return {2, tonumber(to)}
end

local from = redis.call('GET', KEYS[1])
if not from then
  return {0, 0}
end
local k = tonumber(from)
-- 'r'/'s' markers (already given back) and '0' (probed, nothing taken)
-- hold nothing to hand over.
if not k or k <= 0 then
  return {0, 0}
end
redis.call('SET', KEYS[1], 'r' .. k, 'KEEPTTL')
redis.call('SET', KEYS[2], tostring(k), 'PX', ARGV[1])
return {1, k}

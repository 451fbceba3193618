-- layout.lua: switch a SKU to a new bucket count and remember every count
-- it has had.
--
-- KEYS[1] bucket count        fs:{sku:<sku>}:buckets
-- KEYS[2] layouts             fs:{sku:<sku>}:layouts
-- ARGV[1] new bucket count (1..1024)
--
-- Returns {previous count, highest count ever (old and new included)}, or
-- {0, 0} when the SKU has no bucket count (never preheated).
--
-- Both keys share the SKU slot, so a reader that MGETs them sees the new
-- count only together with a layouts list that contains the old one:
-- Release can never probe fewer buckets than some order may hold units in,
-- and a retried Reserve can find the layout its first attempt walked.
local cur = redis.call('GET', KEYS[1])
if not cur then
  return {0, 0}
end
local n = tonumber(ARGV[1])
if not n or n < 1 or n > 1024 or n ~= math.floor(n) then
  return redis.error_reply('ERR layout.lua: bucket count must be an integer in 1..1024')
end
local list = redis.call('GET', KEYS[2]) or ''
local seen = {}
local hi = 0
for v in string.gmatch(list, '[^,]+') do
  local c = tonumber(v)
  seen[c] = true
  if c > hi then hi = c end
end
for _, c in ipairs({tonumber(cur), n}) do
  if not seen[c] then
    if list == '' then list = tostring(c) else list = list .. ',' .. c end
    seen[c] = true
  end
  if c > hi then hi = c end
end
redis.call('SET', KEYS[2], list)
redis.call('SET', KEYS[1], tostring(n))
return {tonumber(cur), hi}

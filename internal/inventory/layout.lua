-- layout.lua: switch a SKU to a new bucket count and remember every count
-- it has had.
--
-- KEYS[1] bucket count        fs:{sku:<sku>}:buckets
-- KEYS[2] layouts             fs:{sku:<sku>}:layouts
-- KEYS[3] layout epoch        fs:{sku:<sku>}:layout:epoch
-- ARGV[1] new bucket count (1..1024)
-- ARGV[2] the epoch the caller read (absent key = 0)
-- ARGV[3] the new epoch, already stamped into every bucket (stamp.lua)
--
-- Returns {previous count, highest count ever (old and new included)},
-- {0, 0} when the SKU has no bucket count (never preheated), or
-- {-1, epoch} when the epoch is no longer ARGV[2] (another Resize or a
-- Preheat moved it since the caller stamped): nothing changed; the caller
-- must stamp again for the epoch after the current one.
--
-- Both keys share the SKU slot, so a reader that MGETs them sees the new
-- count only together with a layouts list that contains the old one:
-- Release can never probe fewer buckets than some order may hold units in,
-- and a retried Reserve can find the layout its first attempt walked.
local cur = redis.call('GET', KEYS[1])
if not cur then
  return {0, 0}
end
-- Compare-and-set on the epoch: the stamps written for ARGV[3] only guard
-- the layout this script writes if nobody moved the epoch in between.
local epoch = redis.call('GET', KEYS[3]) or '0'
if epoch ~= ARGV[2] then
  return {-1, tonumber(epoch)}
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
redis.call('SET', KEYS[3], ARGV[3])
return {tonumber(cur), hi}

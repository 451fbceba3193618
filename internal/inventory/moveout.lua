-- moveout.lua: step 1 of moving units between two buckets (two slots).
--
-- KEYS[1] source bucket stock fs:{sku:<sku>:b<i>}:stock
-- KEYS[2] move-out marker     fs:{sku:<sku>:b<i>}:moveout:<moveID>
-- KEYS[3] pending moves       fs:{sku:<sku>:b<i>}:moves (hash moveID -> "<k>:<dest>")
-- ARGV[1] units wanted (> 0); fewer are taken if buyers emptied the bucket
-- ARGV[2] destination bucket
-- ARGV[3] marker TTL in ms
-- ARGV[4] move id
--
-- Returns the units taken out now or, on a repeat of the same move id, the
-- units the first call took (never takes twice).
--
-- Units taken here are in transit until movein.lua adds them to the
-- destination. The pending entry, written in the same atomic step as the
-- DECRBY, is what lets anyone (a retried Resize, a Release sweeping the
-- bucket) finish the move after a crash; it is deleted only after the put.
local done = redis.call('GET', KEYS[2])
if done then
  return tonumber(string.match(done, '^(%d+)'))
end
local wanted = tonumber(ARGV[1])
if not wanted or wanted <= 0 or wanted ~= math.floor(wanted) then
  return redis.error_reply('ERR moveout.lua: wanted must be a positive integer')
end
local stock = tonumber(redis.call('GET', KEYS[1]) or '0')
-- A negative bucket (tampering) holds nothing that could be moved.
local k = math.min(math.max(stock, 0), wanted)
if k == 0 then
  return 0
end
redis.call('DECRBY', KEYS[1], k)
local rec = string.format('%d', k) .. ':' .. ARGV[2]
redis.call('SET', KEYS[2], rec, 'PX', ARGV[3])
redis.call('HSET', KEYS[3], ARGV[4], rec)
return k

-- Settles a spent pass once the order it was spent on has its answer.
-- A spent pass stays among the passes outstanding (KEYS[8]) until then:
-- its unit is still in the buckets while the order is being placed, and
-- the counter must not hand out another pass for it (with buyers woken at
-- once by the long poll, the counter issued 64 passes for units their
-- holders' buys in flight were taking, and those buys were all refused).
--
--   bought   the order got its unit: the pass leaves the outstanding
--            ones, spent for good (a pass of an order refused for another
--            reason than stock is also spent for good).
--   nothing  the order got no unit (SOLD_OUT, MySQL's drift): the pass
--            is given back to its holder, no longer spent. While a unit
--            is left for it (the other passes outstanding are fewer than
--            the units left) it stays outstanding until its signed expiry
--            and buys that unit; with none left, or past its expiry, it is
--            released as an expired pass is, and its holder is told the
--            sell-out.
--
-- KEYS: the sale's keys (keys.go order)
-- ARGV[1] rank
-- ARGV[2] the pass's expiry (ms), as signed
-- ARGV[3] order id the pass was spent on
-- ARGV[4] the SKU's available units, read from its buckets just before
--         (read for 'nothing' only; 'bought' ignores it)
-- ARGV[5] 'bought' or 'nothing'
-- ARGV[6] the sale's 'bought' count read before ARGV[4] (as sale_me.lua's
--         ARGV[6]: the passes bought since are off the units read)
--
-- A pass settled bought is counted in the sale's 'bought' (once: when it
-- leaves the outstanding ones), which the serving counter reads to keep
-- its read of the units exact (sale_me.lua).
--
-- Returns 1 when settled now as asked (bought; or given back and
-- outstanding), 2 when given back and released, 0 when the pass is not
-- spent on that order or was settled before: a retry changes nothing.
if redis.call('HGET', KEYS[9], ARGV[1]) ~= ARGV[3] then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- The pass's expiry now: the signed one, or later by a pause's length.
local expiry = tonumber(redis.call('ZSCORE', KEYS[8], ARGV[1]) or ARGV[2])
-- While paused nothing expires: a resume moves the passes on.
if redis.call('HGET', KEYS[1], 'state') ~= 'PAUSED' then
  redis.call('ZREMRANGEBYSCORE', KEYS[8], '-inf', now)
end
if ARGV[5] == 'bought' then
  local removed = redis.call('ZREM', KEYS[8], ARGV[1])
  if removed == 1 then
    redis.call('HINCRBY', KEYS[1], 'bought', 1)
  end
  return removed
end
redis.call('HDEL', KEYS[9], ARGV[1])
local others = redis.call('ZCARD', KEYS[8]) - redis.call('ZREM', KEYS[8], ARGV[1])
local units = tonumber(ARGV[4]) - math.max(tonumber(redis.call('HGET', KEYS[1], 'bought') or '0') - tonumber(ARGV[6]), 0)
if expiry > now and others < units then
  redis.call('ZADD', KEYS[8], expiry, ARGV[1])
  return 1
end
return 2

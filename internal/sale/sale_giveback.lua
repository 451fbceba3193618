-- Gives a pass back to its holder: the order it was spent on got no unit
-- (its buy was answered SOLD_OUT, the unit taken by a buy in flight when
-- the pass went out). Spent, the holder would never be told the sell-out
-- by queue/me (a spent pass bought its unit) nor could buy a unit that
-- comes back. Given back while units are left for it, the pass is
-- outstanding again until its signed expiry, and buys one of them; with
-- none left for it (the passes outstanding already cover the units left)
-- it is released as an expired one would be, and its holder is told the
-- sell-out: an outstanding pass is a unit promised, and the counter never
-- promises more than the units left (plus the buys in flight its stale
-- read of them overstates).
--
-- KEYS: the sale's keys (keys.go order)
-- ARGV[1] rank
-- ARGV[2] the pass's expiry (ms), as signed
-- ARGV[3] order id the pass was spent on
-- ARGV[4] the SKU's available units, read from its buckets just before
--
-- Returns 1 when outstanding again, 2 when released, 0 when it is not
-- spent on that order (given back before, or never spent on it): a retry
-- changes nothing.
if redis.call('HGET', KEYS[9], ARGV[1]) ~= ARGV[3] then
  return 0
end
redis.call('HDEL', KEYS[9], ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[8], '-inf', now)
-- Past its expiry it stays gone, as an unused pass would: its unit is the
-- counter's again.
if tonumber(ARGV[2]) > now and redis.call('ZCARD', KEYS[8]) < tonumber(ARGV[4]) then
  redis.call('ZADD', KEYS[8], ARGV[2], ARGV[1])
  return 1
end
return 2

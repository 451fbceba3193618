-- Gives a pass back to its holder: the order it was spent on got no unit
-- (its buy was answered SOLD_OUT, the unit taken by a buy in flight when
-- the pass went out). Spent, the holder would never be told the sell-out
-- by queue/me (a spent pass bought its unit) nor could buy a unit that
-- comes back; given back, the pass is outstanding again until its signed
-- expiry, so both happen as for any holder.
--
-- KEYS: the sale's keys (keys.go order)
-- ARGV[1] rank
-- ARGV[2] the pass's expiry (ms), as signed
-- ARGV[3] order id the pass was spent on
--
-- Returns 1 when given back now, 0 when it is not spent on that order
-- (given back before, or never spent on it): a retry changes nothing.
if redis.call('HGET', KEYS[9], ARGV[1]) ~= ARGV[3] then
  return 0
end
redis.call('HDEL', KEYS[9], ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- Past its expiry it stays gone, as an unused pass would: its unit is the
-- counter's again.
if tonumber(ARGV[2]) > now then
  redis.call('ZADD', KEYS[8], ARGV[2], ARGV[1])
end
return 1

-- fence.lua: move the reconcile fence past every value it had before.
--
-- KEYS[1] reconcile fence     fs:{sku:<sku>}:reconcile:fence
-- ARGV[1] a floor (the restorer's clock in microseconds; Lua numbers
--         are doubles, so nanoseconds would lose precision)
--
-- Returns the new fence.
--
-- A restore follows a data loss that may have taken the fence with it, so
-- INCR alone could land on a value an observation from before the loss
-- also read, and two observations straddling the loss would look alike.
-- Jumping to a clock value (larger than any counter a sale reaches)
-- prevents that; INCR covers a clock that went backwards.
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local floor = tonumber(ARGV[1])
local new = cur + 1
if floor > new then
  new = floor
end
redis.call('SET', KEYS[1], string.format('%d', new))
return new

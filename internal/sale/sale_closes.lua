-- Moves a sale's end (closes_at), which sale_spend.lua reads by this
-- Redis's clock.
--
-- KEYS: the sale's keys (keys.go order)
-- ARGV[1] closes_at (unix ms)
--
-- Returns the sale's state ('' when there is no sale: nothing is written,
-- so a removed sale is not brought back); a CLOSED sale keeps its end.
local state = redis.call('HGET', KEYS[1], 'state')
if not state then
  return ''
end
if state ~= 'CLOSED' then
  redis.call('HSET', KEYS[1], 'closes_at', ARGV[1])
end
return state

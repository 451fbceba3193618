-- Closes the pre-queue: PREQUEUE becomes SHUFFLING and the entrants are
-- counted, so whoever enters from now on is ranked after them (FIFO).
--
-- KEYS: the sale's keys (keys.go order)
--
-- Returns {state, entrants}: the state after the call (SHUFFLING, or the
-- state it already had: a retried open), and the entrants' count.
local state = redis.call('HGET', KEYS[1], 'state')
if not state then
  return {'', 0}
end
if state == 'PREQUEUE' then
  local n = redis.call('HLEN', KEYS[4])
  redis.call('HSET', KEYS[1], 'state', 'SHUFFLING', 'entrants', n)
  return {'SHUFFLING', n}
end
return {state, tonumber(redis.call('HGET', KEYS[1], 'entrants') or '0')}

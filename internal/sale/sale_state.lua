-- Moves an open sale to another state (PAUSED, OPEN again, CLOSED).
--
-- KEYS: the sale's keys (keys.go order)
-- ARGV[1] the new state
-- ARGV[2..] the states it may be left from
--
-- Returns the state after the call: the new one, or the one that did not
-- allow the move ('' when there is no sale). Moving to the state it is in
-- succeeds (a retried activity).
local state = redis.call('HGET', KEYS[1], 'state')
if not state then
  return ''
end
if state == ARGV[1] then
  return state
end
for i = 2, #ARGV do
  if state == ARGV[i] then
    redis.call('HSET', KEYS[1], 'state', ARGV[1])
    return ARGV[1]
  end
end
return state

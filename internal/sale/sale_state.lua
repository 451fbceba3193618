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
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    if ARGV[1] == 'PAUSED' then
      redis.call('HSET', KEYS[1], 'paused_at', now)
    elseif state == 'PAUSED' and ARGV[1] == 'OPEN' then
      -- A pause keeps every holder's place: the passes outstanding when
      -- it began get its length back, so a pause longer than a pass's
      -- life loses none of them (issue 35), and the pace the ETA reads
      -- leaves the pause out.
      local at = tonumber(redis.call('HGET', KEYS[1], 'paused_at') or now)
      local shift = now - at
      for _, rank in ipairs(redis.call('ZRANGEBYSCORE', KEYS[8], '(' .. at, '+inf')) do
        redis.call('ZINCRBY', KEYS[8], shift, rank)
      end
      local first_at = redis.call('HGET', KEYS[1], 'first_served_at')
      if first_at then
        redis.call('HSET', KEYS[1], 'first_served_at', tonumber(first_at) + shift)
      end
      redis.call('HDEL', KEYS[1], 'paused_at')
    end
    redis.call('HSET', KEYS[1], 'state', ARGV[1])
    return ARGV[1]
  end
end
return state

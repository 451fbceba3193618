-- Opens the sale once its entrants' ranks are written: SHUFFLING becomes
-- OPEN and the seed is revealed beside its hash.
--
-- KEYS: the sale's keys (keys.go order)
-- ARGV[1] the seed (hex), whose hash Go checked against the commitment
--
-- Returns the state after the call.
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= 'SHUFFLING' then
  return state or ''
end
redis.call('HSET', KEYS[1], 'state', 'OPEN', 'seed', ARGV[1])
return 'OPEN'

-- Opens the sale once its entrants' ranks are written: SHUFFLING becomes
-- OPEN (PAUSED when a failing go/no-go marked it, sale_hold.lua) and the
-- seed is revealed beside its hash.
--
-- KEYS: the sale's keys (keys.go order)
-- ARGV[1] the seed (hex), whose hash Go checked against the commitment
--
-- Returns the state after the call.
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= 'SHUFFLING' then
  return state or ''
end
local to = redis.call('HGET', KEYS[1], 'open_as') or 'OPEN'
redis.call('HSET', KEYS[1], 'state', to, 'seed', ARGV[1])
if to == 'PAUSED' then
  local t = redis.call('TIME')
  redis.call('HSET', KEYS[1], 'paused_at', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
end
return to

-- Marks a sale not open yet to open PAUSED (a failing go/no-go):
-- sale_reveal.lua then writes PAUSED where it would write OPEN.
--
-- KEYS: the sale's keys (keys.go order)
--
-- Returns the sale's state ('' when there is none); only PREQUEUE and
-- SHUFFLING are marked.
local state = redis.call('HGET', KEYS[1], 'state')
if not state then
  return ''
end
if state == 'PREQUEUE' or state == 'SHUFFLING' then
  redis.call('HSET', KEYS[1], 'open_as', 'PAUSED')
end
return state

-- Enters a buyer in a sale's queue, once: before the freeze with a ticket
-- (the order of entry, which decides nothing: the shuffle does); after it
-- with the next rank after everyone already ranked (FIFO).
--
-- KEYS: the sale's keys (keys.go order)
-- ARGV[1] user id
--
-- Returns {state, ticket, rank, new, seed_hash}: ticket 0 for a buyer who came after
-- the freeze, rank 0 while the entrants are not ranked yet, new 1 when
-- this call entered the buyer. state '' is no sale; CLOSED enters nobody.
local state, hash = unpack(redis.call('HMGET', KEYS[1], 'state', 'seed_hash'))
if not state then
  return {'', 0, 0, 0, ''}
end
local ticket = tonumber(redis.call('HGET', KEYS[4], ARGV[1]) or '0')
local rank = tonumber(redis.call('ZSCORE', KEYS[6], ARGV[1]) or '0')
if ticket > 0 or rank > 0 or state == 'CLOSED' then
  return {state, ticket, rank, 0, hash}
end
if state == 'PREQUEUE' then
  ticket = redis.call('INCR', KEYS[3])
  redis.call('HSET', KEYS[4], ARGV[1], ticket)
  return {state, ticket, 0, 1, hash}
end
rank = tonumber(redis.call('HGET', KEYS[1], 'entrants') or '0') + redis.call('INCR', KEYS[5])
redis.call('ZADD', KEYS[6], rank, ARGV[1])
return {state, 0, rank, 1, hash}

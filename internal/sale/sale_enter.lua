-- Enters a buyer in a sale's queue, once: before the freeze with a ticket
-- (the order of entry, which decides nothing: the shuffle does); after it
-- with the next rank after everyone already ranked (FIFO).
--
-- KEYS: the sale's keys (keys.go order)
-- ARGV[1] user id
--
-- Returns {state, ticket, rank, new, seed_hash}: ticket 0 for a buyer who came after
-- the freeze, rank 0 while the entrants are not ranked yet, new 1 when
-- this call entered the buyer. state '' is no sale; CLOSED enters nobody;
-- FULL enters nobody new once the queue holds the sale's max_entrants
-- (everyone in it, entered before or after the freeze): each entrant
-- costs Redis memory until the sale ends.
local state, hash, cap = unpack(redis.call('HMGET', KEYS[1], 'state', 'seed_hash', 'max_entrants'))
if not state then
  return {'', 0, 0, 0, ''}
end
local ticket = tonumber(redis.call('HGET', KEYS[4], ARGV[1]) or '0')
local rank = tonumber(redis.call('ZSCORE', KEYS[6], ARGV[1]) or '0')
if ticket > 0 or rank > 0 or state == 'CLOSED' then
  return {state, ticket, rank, 0, hash}
end
cap = tonumber(cap or '0')
if state == 'PREQUEUE' then
  if cap > 0 and redis.call('HLEN', KEYS[4]) >= cap then
    return {'FULL', 0, 0, 0, hash}
  end
  ticket = redis.call('INCR', KEYS[3])
  redis.call('HSET', KEYS[4], ARGV[1], ticket)
  return {state, ticket, 0, 1, hash}
end
local entrants = tonumber(redis.call('HGET', KEYS[1], 'entrants') or '0')
if cap > 0 and entrants + tonumber(redis.call('GET', KEYS[5]) or '0') >= cap then
  return {'FULL', 0, 0, 0, hash}
end
rank = entrants + redis.call('INCR', KEYS[5])
redis.call('ZADD', KEYS[6], rank, ARGV[1])
return {state, 0, rank, 1, hash}

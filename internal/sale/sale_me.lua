-- A buyer's place in an open sale's queue; first, the serving counter
-- moves on: expired passes give their units back, then passes are issued
-- in rank order while the units left exceed the passes outstanding.
--
-- KEYS: the sale's keys (keys.go order)
-- ARGV[1] user id
-- ARGV[2] the SKU's available units, read from its buckets just before
--         (other slots); a stale read overstates them by the buys in flight
--
-- Returns {state, ticket, rank, serving, ranked, pass_expiry_ms, spent,
-- seed_hash, seed, outstanding, now_ms, opens_at_ms, first_served,
-- first_served_at_ms}: pass_expiry_ms is 0 unless the buyer's pass is
-- outstanding, spent 1 when it was spent. state '' is no sale.
--
-- first_served and first_served_at record the counter's first move (the
-- units on sale at the open, all passed at once): every rank served after
-- it was served by a unit coming back (a pass expired unused, an unpaid
-- order released), whose pace gives the ETA of the ranks still waiting.
local state = redis.call('HGET', KEYS[1], 'state')
if not state then
  return {'', 0, 0, 0, 0, 0, 0, '', '', 0, 0, 0, 0, 0}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local entrants = tonumber(redis.call('HGET', KEYS[1], 'entrants') or '0')
local ranked = entrants + tonumber(redis.call('GET', KEYS[5]) or '0')
local serving = tonumber(redis.call('GET', KEYS[7]) or '0')
if state == 'OPEN' then
  redis.call('ZREMRANGEBYSCORE', KEYS[8], '-inf', now)
  local room = tonumber(ARGV[2]) - redis.call('ZCARD', KEYS[8])
  local ttl = tonumber(redis.call('HGET', KEYS[1], 'pass_ttl_ms'))
  local before = serving
  while room > 0 and serving < ranked do
    serving = serving + 1
    redis.call('ZADD', KEYS[8], now + ttl, serving)
    room = room - 1
  end
  if serving ~= before then
    redis.call('SET', KEYS[7], serving)
    if redis.call('HSETNX', KEYS[1], 'first_served', serving) == 1 then
      redis.call('HSET', KEYS[1], 'first_served_at', now)
    end
  end
end
local ticket = tonumber(redis.call('HGET', KEYS[4], ARGV[1]) or '0')
local rank = tonumber(redis.call('ZSCORE', KEYS[6], ARGV[1]) or '0')
local expiry, spent = 0, 0
if rank > 0 and rank <= serving then
  expiry = tonumber(redis.call('ZSCORE', KEYS[8], rank) or '0')
  if redis.call('HEXISTS', KEYS[9], rank) == 1 then
    spent = 1
  end
end
local hash, seed, opens, first, first_at = unpack(redis.call('HMGET', KEYS[1], 'seed_hash', 'seed', 'opens_at',
  'first_served', 'first_served_at'))
return {state, ticket, rank, serving, ranked, expiry, spent, hash or '', seed or '',
  redis.call('ZCARD', KEYS[8]), now, tonumber(opens or '0'), tonumber(first or '0'), tonumber(first_at or '0')}

-- A buyer's place in an open sale's queue; first, the serving counter
-- moves on: expired passes give their units back, then passes are issued
-- in rank order while the passes outstanding are fewer than both the units
-- left and the placement capacity (docs/design/fair-sale.md, "The serving
-- counter and passes").
--
-- KEYS: the sale's keys (keys.go order)
-- ARGV[1] user id
-- ARGV[2] the SKU's available units, read from its buckets just before
--         (other slots); a stale read overstates them by the buys in flight
-- ARGV[3] the calling API instance's id
-- ARGV[4] the units that instance can have in flight for a queued SKU
--         (its per-SKU window); 0 publishes nothing
-- ARGV[5] how long that publication lives (ms): an instance that stops
--         looking (dead, or out of the pool) drops out after it
-- ARGV[6] the sale's 'bought' count (sale_settle.lua) read before ARGV[2],
--         or '' when it was not read
--
-- Exact, not stale: a pass bought between the read of the units and this
-- script (its unit taken, then the pass settled out of the outstanding)
-- would otherwise count twice as room, once as a unit read and once as a
-- pass no longer outstanding, and a pass would go out for a unit that is
-- gone. Each such extra pass stayed until the end, where more holders
-- than units raced and the slowest lost (a unit that came back went to
-- whoever retried first, not to the next rank). So every pass settled
-- bought since ARGV[6] was read is taken off the units read: a buy that
-- took its unit before the read is then subtracted twice, which only
-- delays a pass to the next look. Far from the end it cannot matter: the
-- passes outstanding never exceed the capacity, so while the units read
-- are at least four capacities no buy in one look's window brings them
-- under the passes. Only below that does the caller pay the read of
-- 'bought': without it (ARGV[6] '') the script then answers {'EXACT'},
-- having moved nothing but expired passes, and is called again with it.
--
-- The capacity is the sum over the instances whose publication is live
-- (Redis's clock); dead fields are removed here. A pass is one unit a
-- buyer may place at once, so bounding the passes outstanding by what the
-- instances can have in flight is what lets a pass holder skip the edge's
-- in-flight cap (internal/edge, Request.Pass): the counter is the
-- admission control of a queued SKU.
--
-- Returns {state, ticket, rank, serving, ranked, pass_expiry_ms, spent,
-- seed_hash, seed, outstanding, now_ms, opens_at_ms, first_served,
-- first_served_at_ms, capacity, sale_id}: pass_expiry_ms is 0 unless the buyer's
-- pass is outstanding and not spent, spent 1 when it was spent. The
-- passes outstanding include those spent on orders still being placed
-- (sale_settle.lua). state '' is no sale.
--
-- first_served and first_served_at record the counter's first move: every
-- rank served after min(units, capacity) at the open was served by a pass
-- spent or expired, or a unit coming back, whose pace gives the ETA of the
-- ranks still waiting.
local state = redis.call('HGET', KEYS[1], 'state')
if not state then
  return {'', 0, 0, 0, 0, 0, 0, '', '', 0, 0, 0, 0, 0, 0, ''}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(ARGV[4]) > 0 then
  redis.call('HSET', KEYS[10], ARGV[3], ARGV[4] .. ':' .. (now + tonumber(ARGV[5])))
  -- The hash itself goes once no instance is left (the longest lifetime
  -- of its fields), so a sale that ended leaves nothing behind.
  if redis.call('PTTL', KEYS[10]) < tonumber(ARGV[5]) then
    redis.call('PEXPIRE', KEYS[10], tonumber(ARGV[5]))
  end
end
local capacity = 0
local published = redis.call('HGETALL', KEYS[10])
for i = 1, #published, 2 do
  local units, expiry = string.match(published[i + 1], '^(%d+):(%d+)$')
  if units and tonumber(expiry) > now then
    capacity = capacity + tonumber(units)
  else
    redis.call('HDEL', KEYS[10], published[i])
  end
end
local entrants = tonumber(redis.call('HGET', KEYS[1], 'entrants') or '0')
local ranked = entrants + tonumber(redis.call('GET', KEYS[5]) or '0')
local serving = tonumber(redis.call('GET', KEYS[7]) or '0')
if state == 'OPEN' then
  redis.call('ZREMRANGEBYSCORE', KEYS[8], '-inf', now)
  local units = tonumber(ARGV[2])
  if ARGV[6] == '' then
    if units < 4 * capacity then
      return {'EXACT'}
    end
  else
    units = units - math.max(tonumber(redis.call('HGET', KEYS[1], 'bought') or '0') - tonumber(ARGV[6]), 0)
  end
  local room = math.min(units, capacity) - redis.call('ZCARD', KEYS[8])
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
  if redis.call('HEXISTS', KEYS[9], rank) == 1 then
    spent = 1
  else
    expiry = tonumber(redis.call('ZSCORE', KEYS[8], rank) or '0')
  end
end
local hash, seed, opens, first, first_at, sale_id = unpack(redis.call('HMGET', KEYS[1], 'seed_hash', 'seed', 'opens_at',
  'first_served', 'first_served_at', 'sale_id'))
return {state, ticket, rank, serving, ranked, expiry, spent, hash or '', seed or '',
  redis.call('ZCARD', KEYS[8]), now, tonumber(opens or '0'), tonumber(first or '0'), tonumber(first_at or '0'), capacity,
  sale_id or ''}

-- Creates a sale in PREQUEUE, once per sale id; the seed is written once
-- and never returned before the open (only its hash leaves Go).
--
-- KEYS: the sale's keys (keys.go order)
-- ARGV[1] sale id (the SaleWorkflow's run id)
-- ARGV[2] opens_at (unix ms)
-- ARGV[3] pass ttl (ms)
-- ARGV[4] a fresh seed (hex), used only if this sale has none yet
-- ARGV[5] its SHA-256 (hex)
--
-- Returns the seed's hash of the sale as stored. A hash left by an earlier
-- sale of the SKU (another sale id) is removed with every key of that sale
-- first, so a new sale starts from an empty queue.
local id = redis.call('HGET', KEYS[1], 'sale_id')
if id == ARGV[1] then
  return redis.call('HGET', KEYS[1], 'seed_hash')
end
if id then
  redis.call('DEL', unpack(KEYS))
end
redis.call('SET', KEYS[2], ARGV[4])
redis.call('HSET', KEYS[1], 'sale_id', ARGV[1], 'state', 'PREQUEUE', 'opens_at', ARGV[2],
  'pass_ttl_ms', ARGV[3], 'seed_hash', ARGV[5])
return ARGV[5]

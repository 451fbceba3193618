-- Creates a sale in PREQUEUE, once per sale id, with the commitment to its
-- seed: the seed itself is not in Redis before the open (MySQL keeps it),
-- so reading Redis tells no rank in advance.
--
-- KEYS: the sale's keys (keys.go order)
-- ARGV[1] sale id (the SaleWorkflow's run id)
-- ARGV[2] opens_at (unix ms)
-- ARGV[3] pass ttl (ms)
-- ARGV[4] the seed's SHA-256 (hex)
-- ARGV[5] the most buyers the queue takes (sale_enter.lua)
--
-- Returns the seed's hash of the sale as stored. A hash left by an earlier
-- sale of the SKU (another sale id) is removed with every key of that sale
-- first (UNLINK: a queue of a million entrants is freed in the background,
-- not inside this script), so a new sale starts from an empty queue.
local id = redis.call('HGET', KEYS[1], 'sale_id')
if id == ARGV[1] then
  return redis.call('HGET', KEYS[1], 'seed_hash')
end
if id then
  redis.call('UNLINK', unpack(KEYS))
end
redis.call('HSET', KEYS[1], 'sale_id', ARGV[1], 'state', 'PREQUEUE', 'opens_at', ARGV[2],
  'pass_ttl_ms', ARGV[3], 'seed_hash', ARGV[4], 'max_entrants', ARGV[5])
return ARGV[4]

-- limit_give.lua: give an order's counted units back to its buyer's
-- allowance, once.
--
-- KEYS[1] the buyer's count   fs:{sku:<sku>}:held:<user>     (the user the claim names)
-- KEYS[2] the order's claim   fs:{sku:<sku>}:claim:<order>
-- ARGV[1] mode: 'r' = Release, 's' = Reserve gave up (sold out)
-- ARGV[2] tombstone TTL in ms (mode 'r' only)
-- ARGV[3] the user KEYS[1] belongs to, as the caller read it from the claim
--         ('' when the caller found no claim)
--
-- Returns
--   {0, 0}   nothing was counted (mode 'r' leaves a tombstone)
--   {1, k}   k units given back now
--   {2, k}   given back earlier (k units then); nothing changed now
--   {-1, 0}  the claim names another user than ARGV[3] (it was written after
--            the caller read it): read it again and retry
--
-- Both keys share the SKU's hash tag, so the check and the decrement are one
-- atomic step and a retried Release gives nothing back twice.

local mode = ARGV[1]
if mode ~= 'r' and mode ~= 's' then
  return redis.error_reply('ERR limit_give.lua: mode must be r or s')
end

local claim = redis.call('GET', KEYS[2])
if not claim then
  if mode == 'r' then
    -- Like release.lua's tombstone: a Reserve attempt of this order still
    -- in flight must not count units after the order was released, or
    -- they would stay counted with nobody to give them back.
    redis.call('SET', KEYS[2], 'r0::', 'PX', ARGV[2])
  end
  return {0, 0}
end

local state, k, sale, user = string.match(claim, '^(%a)(%d+):(%d*):(.*)$')
if not state then
  return redis.error_reply('ERR limit_give.lua: corrupt claim')
end
k = tonumber(k)
if state ~= 'h' then
  return {2, k}
end
if user ~= ARGV[3] then
  return {-1, 0}
end

-- Only the sale the claim counted in loses the units: a count of a later
-- sale never held them.
local v = redis.call('GET', KEYS[1])
if v then
  local s, n = string.match(v, '^(%d+):(%d+)$')
  if s == sale then
    n = tonumber(n) - k
    if n > 0 then
      redis.call('SET', KEYS[1], s .. ':' .. n, 'KEEPTTL')
    else
      redis.call('DEL', KEYS[1])
    end
  end
end
redis.call('SET', KEYS[2], mode .. k .. ':' .. sale .. ':' .. user, 'KEEPTTL')
return {1, k}

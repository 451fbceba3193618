-- bump.lua: announce that stock went up.
--
-- KEYS[1] generation          fs:{sku:<sku>}:gen
-- KEYS[2] sold-out flag       fs:{sku:<sku>}:soldout
-- KEYS[3] bucket count        fs:{sku:<sku>}:buckets
-- ARGV[1] sku id (the message)
-- ARGV[2] channel (fs:stock-changed)
--
-- Returns {new generation, bucket count (0 if none)}.
--
-- Run after the units are back in their bucket. INCR first so any sold-out
-- decision based on an older gen is refused by soldout.lua; DEL the flag so
-- buyers are not turned away while stock exists; PUBLISH so API instances
-- drop their in-process sold-out cache instead of waiting for it to expire.
-- All in one script so no flag can slip in between the INCR and the DEL.
--
-- The bucket count is read here, after the units landed, at no extra round
-- trip: a caller whose units landed in a bucket at or beyond it (removed by
-- a concurrent shrink, see resize.go) knows it must sweep them.
local gen = redis.call('INCR', KEYS[1])
redis.call('DEL', KEYS[2])
redis.call('PUBLISH', ARGV[2], ARGV[1])
return {gen, tonumber(redis.call('GET', KEYS[3]) or '0')}

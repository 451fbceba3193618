-- Redis-down degradation (issue 5).
--
-- While Redis is unreachable, orders are reserved in MySQL alone
-- (orders.degraded = 1). Redis then no longer knows which units are taken,
-- so every such order, and every close of such an order, bumps
-- inventory.redis_resync in the same transaction that moved its units.
-- A non-zero value means "Redis's buckets for this SKU must be re-synced
-- from MySQL before buyers use them again": reservations stay MySQL-only
-- until the resync clears it with a compare-and-set on the value it read
-- (orderdb.Store.FinishResync), so a bump that lands during a resync is
-- never lost.

-- +goose Up
-- Two statements: the embedded go-mysql-server of the demo cannot see a
-- column added in the same ALTER as its constraint.
ALTER TABLE inventory ADD COLUMN redis_resync BIGINT NOT NULL DEFAULT 0;
ALTER TABLE inventory ADD CONSTRAINT inventory_redis_resync_nonneg CHECK (redis_resync >= 0);
ALTER TABLE orders
    ADD COLUMN degraded TINYINT(1) NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE orders DROP COLUMN degraded;
ALTER TABLE inventory DROP CONSTRAINT inventory_redis_resync_nonneg;
ALTER TABLE inventory DROP COLUMN redis_resync;

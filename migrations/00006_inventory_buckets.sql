-- A SKU's MySQL stock split into bucket rows (issue 26), as Redis splits it
-- into buckets, so orders of one SKU stop queueing on one row lock.
--
-- The SKU's truth is its inventory row plus the sum of its bucket rows,
-- column by column. Each bucket row is a stock row of its own, with the
-- same CHECKs as inventory (non-negative, available + frozen + sold =
-- total), so the sum obeys them too. A SKU without bucket rows is what it
-- was: nothing here changes existing data, and bucket rows are made only
-- by Store.SplitStock (inventory.bucket_rows says how many).
--
-- order_items.bucket names the bucket row a line's units were frozen in
-- (NULL: the inventory row), so paying and closing move them there. The
-- journal's bucket names the row an entry moved (NULL: the inventory row):
-- each row's entries chain on their own, and their deltas still sum to the
-- SKU's truth. MOVE entries carry units between a SKU's rows (a split or a
-- gather); their deltas sum to zero over the SKU.

-- +goose Up
CREATE TABLE inventory_buckets (
    sku_id     VARCHAR(64) NOT NULL,
    bucket     INT         NOT NULL,
    total      BIGINT      NOT NULL,
    available  BIGINT      NOT NULL,
    frozen     BIGINT      NOT NULL DEFAULT 0,
    sold       BIGINT      NOT NULL DEFAULT 0,
    -- the SKU's sale the row was split in: a create that read the price
    -- and limit of another sale must not take from it
    sale_started_at DATETIME(3) NOT NULL,
    updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (sku_id, bucket),
    CONSTRAINT inventory_buckets_available_nonneg CHECK (available >= 0),
    CONSTRAINT inventory_buckets_frozen_nonneg    CHECK (frozen >= 0),
    CONSTRAINT inventory_buckets_sold_nonneg      CHECK (sold >= 0),
    CONSTRAINT inventory_buckets_balance          CHECK (available + frozen + sold = total)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
ALTER TABLE inventory ADD COLUMN bucket_rows INT NOT NULL DEFAULT 0;
ALTER TABLE order_items ADD COLUMN bucket INT NULL;
ALTER TABLE inventory_journal ADD COLUMN bucket INT NULL;
ALTER TABLE inventory_journal DROP CONSTRAINT inventory_journal_type_valid;
ALTER TABLE inventory_journal ADD CONSTRAINT inventory_journal_type_valid
    CHECK (type IN ('RESERVE', 'RELEASE', 'SELL', 'RESTOCK', 'RESET', 'MOVE'));

-- +goose Down
ALTER TABLE inventory_journal DROP CONSTRAINT inventory_journal_type_valid;
ALTER TABLE inventory_journal ADD CONSTRAINT inventory_journal_type_valid
    CHECK (type IN ('RESERVE', 'RELEASE', 'SELL', 'RESTOCK', 'RESET'));
ALTER TABLE inventory_journal DROP COLUMN bucket;
ALTER TABLE order_items DROP COLUMN bucket;
ALTER TABLE inventory DROP COLUMN bucket_rows;
DROP TABLE inventory_buckets;

-- Schema for the flash-sale order store (internal/orderdb).
--
-- MySQL is the final guard behind the Redis pre-deduction, so the invariants
-- that must never break are CHECK constraints rather than application code:
-- even a buggy caller or a hand-written UPDATE cannot oversell or lose units.
-- MariaDB >= 10.2 and MySQL >= 8.0.16 enforce CHECK.
--
-- Identifiers use utf8mb4_bin so keys compare byte-for-byte like Go strings
-- ("SKU-a" and "sku-A" are different SKUs, not a duplicate-key surprise).
-- Timestamps are DATETIME(3) holding UTC; the store writes them explicitly.

-- +goose Up
CREATE TABLE inventory (
    sku_id         VARCHAR(64) NOT NULL,
    total          BIGINT      NOT NULL,
    available      BIGINT      NOT NULL,
    -- reserved by PENDING_PAYMENT orders, not yet paid
    frozen         BIGINT      NOT NULL DEFAULT 0,
    sold           BIGINT      NOT NULL DEFAULT 0,
    -- minor currency units (cents)
    price          BIGINT      NOT NULL,
    -- how many Redis stock buckets the SKU is split into
    bucket_count   INT         NOT NULL,
    per_user_limit INT         NOT NULL DEFAULT 1,
    created_at     DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    updated_at     DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (sku_id),
    CONSTRAINT inventory_total_nonneg     CHECK (total >= 0),
    CONSTRAINT inventory_available_nonneg CHECK (available >= 0),
    CONSTRAINT inventory_frozen_nonneg    CHECK (frozen >= 0),
    CONSTRAINT inventory_sold_nonneg      CHECK (sold >= 0),
    CONSTRAINT inventory_price_nonneg     CHECK (price >= 0),
    CONSTRAINT inventory_buckets_range    CHECK (bucket_count BETWEEN 1 AND 1024),
    CONSTRAINT inventory_limit_positive   CHECK (per_user_limit >= 1),
    -- conservation of units: every move is between two of the three buckets
    CONSTRAINT inventory_balance          CHECK (available + frozen + sold = total)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE orders (
    id         BIGINT       NOT NULL AUTO_INCREMENT,
    order_id   VARCHAR(64)  NOT NULL,
    user_id    VARCHAR(64)  NOT NULL,
    status     VARCHAR(24)  NOT NULL,
    amount     BIGINT       NOT NULL,
    pay_by     DATETIME(3)  NOT NULL,
    reason     VARCHAR(255) NOT NULL DEFAULT '',
    created_at DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    updated_at DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    closed_at  DATETIME(3)  NULL,
    PRIMARY KEY (id),
    UNIQUE KEY orders_order_id (order_id),
    KEY orders_user_id (user_id),
    -- lets a sweeper find overdue unpaid orders without a scan
    KEY orders_status_pay_by (status, pay_by),
    CONSTRAINT orders_status_valid CHECK (status IN ('PENDING_PAYMENT', 'PAID', 'EXPIRED', 'CANCELLED')),
    CONSTRAINT orders_amount_nonneg CHECK (amount >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE order_items (
    id         BIGINT      NOT NULL AUTO_INCREMENT,
    order_id   VARCHAR(64) NOT NULL,
    sku_id     VARCHAR(64) NOT NULL,
    quantity   BIGINT      NOT NULL,
    -- price captured at reservation time; a later PutSKU must not reprice it
    unit_price BIGINT      NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY order_items_order_sku (order_id, sku_id),
    CONSTRAINT order_items_order_fk FOREIGN KEY (order_id) REFERENCES orders (order_id) ON DELETE CASCADE,
    CONSTRAINT order_items_quantity_positive CHECK (quantity > 0),
    CONSTRAINT order_items_price_nonneg CHECK (unit_price >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Append-only ledger of every inventory move. Summing the deltas of a SKU
-- replays its current row, which is how drift between Redis and MySQL (or a
-- bug) gets audited after a sale.
CREATE TABLE inventory_journal (
    id               BIGINT       NOT NULL AUTO_INCREMENT,
    sku_id           VARCHAR(64)  NOT NULL,
    -- order id, or a reset/restock request id
    ref_id           VARCHAR(64)  NOT NULL,
    type             VARCHAR(16)  NOT NULL,
    delta_available  BIGINT       NOT NULL,
    delta_frozen     BIGINT       NOT NULL,
    delta_sold       BIGINT       NOT NULL,
    available_before BIGINT       NOT NULL,
    available_after  BIGINT       NOT NULL,
    frozen_after     BIGINT       NOT NULL,
    sold_after       BIGINT       NOT NULL,
    reason           VARCHAR(255) NOT NULL DEFAULT '',
    created_at       DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id),
    -- a retried activity can never journal (and therefore move) twice
    UNIQUE KEY inventory_journal_ref (ref_id, sku_id, type),
    KEY inventory_journal_sku (sku_id, id),
    CONSTRAINT inventory_journal_type_valid CHECK (type IN ('RESERVE', 'RELEASE', 'SELL', 'RESTOCK', 'RESET'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Money received. No foreign key to orders: a payment for an unknown order
-- must still be recorded so it can be refunded.
CREATE TABLE payments (
    id             BIGINT       NOT NULL AUTO_INCREMENT,
    transaction_id VARCHAR(128) NOT NULL,
    order_id       VARCHAR(64)  NOT NULL,
    amount         BIGINT       NOT NULL,
    status         VARCHAR(24)  NOT NULL,
    reason         VARCHAR(255) NOT NULL DEFAULT '',
    created_at     DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id),
    -- the payment provider's id: each transaction is recorded exactly once
    UNIQUE KEY payments_transaction_id (transaction_id),
    KEY payments_order_id (order_id),
    CONSTRAINT payments_status_valid CHECK (status IN ('CAPTURED', 'REFUND_REQUIRED')),
    CONSTRAINT payments_amount_nonneg CHECK (amount >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE IF EXISTS payments;
DROP TABLE IF EXISTS inventory_journal;
DROP TABLE IF EXISTS order_items;
DROP TABLE IF EXISTS orders;
DROP TABLE IF EXISTS inventory;

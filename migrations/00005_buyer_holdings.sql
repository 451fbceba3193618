-- The per-user limit on a row of its own (issue 26): how many units of a
-- SKU a buyer holds in the SKU's current sale (sale_started_at, moved by
-- every PutSKU), counting PENDING_PAYMENT and PAID orders. CreateOrder
-- adds an order's units here and CloseOrder takes them back, each in the
-- transaction that moves the stock, so the count is exact without the
-- SUM over the buyer's orders that used to run under the SKU's row lock.
--
-- The limit of the sale is copied into the row (max_held) so the CHECK
-- constraint refuses a buyer over it: the database stays the final guard
-- whatever the caller read. A sale's limit never changes (a new limit is
-- a PutSKU, which starts a new sale and so new rows).
--
-- Existing data comes across: every buyer's units of the current sale of
-- every SKU are summed from the orders, as the old check counted them.
-- Rolling deploys: a worker of the previous release still creates orders
-- without touching this table, so the limit is lenient for orders created
-- by old workers after this ran (MySQL's stock guard is unaffected); stop
-- old workers before starting new ones for an exact limit.

-- +goose Up
CREATE TABLE buyer_holdings (
    sku_id          VARCHAR(64) NOT NULL,
    sale_started_at DATETIME(3) NOT NULL,
    user_id         VARCHAR(64) NOT NULL,
    held            BIGINT      NOT NULL,
    max_held        BIGINT      NOT NULL,
    PRIMARY KEY (sku_id, sale_started_at, user_id),
    CONSTRAINT buyer_holdings_held_nonneg CHECK (held >= 0),
    CONSTRAINT buyer_holdings_within_limit CHECK (held <= max_held)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

INSERT INTO buyer_holdings (sku_id, sale_started_at, user_id, held, max_held)
SELECT v.sku_id, v.sale_started_at, o.user_id, SUM(i.quantity), GREATEST(v.per_user_limit, SUM(i.quantity))
FROM orders o
JOIN order_items i ON i.order_id = o.order_id
JOIN inventory v ON v.sku_id = i.sku_id
WHERE o.status IN ('PENDING_PAYMENT', 'PAID') AND o.created_at >= v.sale_started_at
GROUP BY v.sku_id, v.sale_started_at, o.user_id;

-- +goose Down
DROP TABLE buyer_holdings;

-- A SKU's payment window (its sale terms, flashsale.Terms): how long a
-- buyer has to pay, counted from the order's creation. CreateOrder reads it
-- with the SKU's price and fixes the order's pay_by from it; 0 is the
-- worker's PAYMENT_TIMEOUT, as every SKU had. The bounds are the
-- application's (1 minute to 72 hours, below the Redis markers' TTL), kept
-- here too so no hand-written UPDATE sets a window Redis cannot outlive.

-- +goose Up
ALTER TABLE inventory ADD COLUMN payment_window_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE inventory ADD CONSTRAINT inventory_payment_window_range
    CHECK (payment_window_ms = 0 OR payment_window_ms BETWEEN 60000 AND 259200000);

-- +goose Down
ALTER TABLE inventory DROP CONSTRAINT inventory_payment_window_range;
ALTER TABLE inventory DROP COLUMN payment_window_ms;

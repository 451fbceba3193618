-- When a SKU's units are taken (its sale terms, flashsale.Terms): 'hold'
-- (every SKU so far) takes them when the order is placed and holds them
-- until pay_by; 'payment' takes them when the payment is applied, the
-- order holding only a booking in Redis (overbook bookings per unit; 0
-- reads as the default). orders.deferred marks an order placed on such a
-- SKU: it froze nothing, its payment moves available -> sold directly
-- (a SELL entry alone), and one that finds no unit is recorded for refund.

-- +goose Up
ALTER TABLE inventory ADD COLUMN deduct VARCHAR(8) NOT NULL DEFAULT 'hold';
ALTER TABLE inventory ADD CONSTRAINT inventory_deduct_valid CHECK (deduct IN ('hold', 'payment'));
ALTER TABLE inventory ADD COLUMN overbook INT NOT NULL DEFAULT 0;
ALTER TABLE inventory ADD CONSTRAINT inventory_overbook_range CHECK (overbook BETWEEN 0 AND 10);
ALTER TABLE orders ADD COLUMN deferred BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE orders DROP COLUMN deferred;
ALTER TABLE inventory DROP CONSTRAINT inventory_overbook_range;
ALTER TABLE inventory DROP COLUMN overbook;
ALTER TABLE inventory DROP CONSTRAINT inventory_deduct_valid;
ALTER TABLE inventory DROP COLUMN deduct;

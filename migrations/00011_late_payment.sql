-- A SKU's rules for money at the deadline's edge (its sale terms,
-- flashsale.Terms): late_payment says whether money received after pay_by
-- is captured while the order still holds its units ('capture_if_held') or
-- refunded ('refund', what every SKU did); release_on_failed_payment closes
-- an order at once on a FAILED payment callback. CreateOrder copies the
-- order's rule onto the order (late_capture, release_on_failed), so a retry
-- and a redefinition of the SKU leave a written order's rules as they were.
-- hold_extended records the one extension of an order's pay_by a payment
-- provider may ask for: a second is refused here too.

-- +goose Up
ALTER TABLE inventory ADD COLUMN late_payment VARCHAR(16) NOT NULL DEFAULT 'refund';
ALTER TABLE inventory ADD CONSTRAINT inventory_late_payment_valid CHECK (late_payment IN ('refund', 'capture_if_held'));
ALTER TABLE inventory ADD COLUMN release_on_failed_payment BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE orders ADD COLUMN late_capture BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE orders ADD COLUMN release_on_failed BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE orders ADD COLUMN hold_extended BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE orders DROP COLUMN hold_extended;
ALTER TABLE orders DROP COLUMN release_on_failed;
ALTER TABLE orders DROP COLUMN late_capture;
ALTER TABLE inventory DROP COLUMN release_on_failed_payment;
ALTER TABLE inventory DROP CONSTRAINT inventory_late_payment_valid;
ALTER TABLE inventory DROP COLUMN late_payment;

-- REFUNDED: money owed back (REFUND_REQUIRED) that the payment provider has
-- sent back, as the provider or an operator marks it
-- (POST /api/v1/admin/payments/{transaction_id}/refunded, `starter refund
-- mark`). Nothing changes existing rows.

-- +goose Up
ALTER TABLE payments DROP CONSTRAINT payments_status_valid;
ALTER TABLE payments ADD CONSTRAINT payments_status_valid
    CHECK (status IN ('CAPTURED', 'REFUND_REQUIRED', 'REFUNDED'));

-- +goose Down
UPDATE payments SET status = 'REFUND_REQUIRED' WHERE status = 'REFUNDED';
ALTER TABLE payments DROP CONSTRAINT payments_status_valid;
ALTER TABLE payments ADD CONSTRAINT payments_status_valid
    CHECK (status IN ('CAPTURED', 'REFUND_REQUIRED'));

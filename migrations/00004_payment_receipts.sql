-- Payments our door (the HTTP API, the CLI) received, written before the
-- order's workflow is told. A payment received before the order's pay_by
-- is the buyer's in time even when Temporal could not deliver it before the
-- deadline (restarting, unreachable): CloseOrder finds it here and refuses
-- to close the order, and the workflow applies it instead. The first
-- receipt of a transaction is kept: its arrival time is the one that counts.
-- A receipt only says the money arrived; payments records what became of it.

-- +goose Up
CREATE TABLE payment_receipts (
    transaction_id VARCHAR(128) NOT NULL,
    order_id       VARCHAR(64)  NOT NULL,
    amount         BIGINT       NOT NULL,
    received_at    DATETIME(3)  NOT NULL,
    PRIMARY KEY (transaction_id),
    KEY payment_receipts_order (order_id, received_at),
    CONSTRAINT payment_receipts_amount_positive CHECK (amount > 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE payment_receipts;

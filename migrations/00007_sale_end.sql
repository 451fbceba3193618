-- The end of a SKU's sale (issue 23, a fair sale's close).
--
-- sale_ended_at is set by SaleWorkflow once the sale is closed, every order
-- has settled and MySQL and Redis agreed: from then on the SKU's Redis keys
-- are being removed (or are gone), so reconciliation and the invariant
-- checker must not read a missing bucket count as lost stock. A PutSKU or a
-- preheat (a new sale) clears it. NULL for every SKU that never ended a
-- sale, so nothing here changes existing data.
--
-- REFUND is the journal entry of a paid order a void cancelled: its units
-- go from sold back to available, and its captured money is recorded for
-- refund.

-- +goose Up
ALTER TABLE inventory ADD COLUMN sale_ended_at DATETIME(3) NULL;
ALTER TABLE inventory_journal DROP CONSTRAINT inventory_journal_type_valid;
ALTER TABLE inventory_journal ADD CONSTRAINT inventory_journal_type_valid
    CHECK (type IN ('RESERVE', 'RELEASE', 'SELL', 'RESTOCK', 'RESET', 'MOVE', 'REFUND'));

-- +goose Down
ALTER TABLE inventory_journal DROP CONSTRAINT inventory_journal_type_valid;
ALTER TABLE inventory_journal ADD CONSTRAINT inventory_journal_type_valid
    CHECK (type IN ('RESERVE', 'RELEASE', 'SELL', 'RESTOCK', 'RESET', 'MOVE'));
ALTER TABLE inventory DROP COLUMN sale_ended_at;

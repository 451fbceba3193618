-- Reconciliation's gate (docs/operations.md, "Invariants and
-- reconciliation"): a confirmed drift larger than the run may correct by
-- itself is held here for a person, with the run's report (the two
-- observations and the SKU's journal entries since the last correction).
-- `starter reconcile approve` lets the next run that confirms the same
-- drift correct it; `reject` keeps it held. One row per SKU, drift and
-- fence: a run that confirms the same drift again finds its row.

-- +goose Up
CREATE TABLE reconcile_holds (
    id          BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    sku_id      VARCHAR(64)  NOT NULL,
    drift       BIGINT       NOT NULL,
    fence       BIGINT       NOT NULL,
    status      VARCHAR(16)  NOT NULL,
    report      MEDIUMTEXT   NOT NULL,
    created_at  DATETIME(3)  NOT NULL,
    decided_at  DATETIME(3)  NULL,
    decided_by  VARCHAR(128) NOT NULL DEFAULT '',
    UNIQUE KEY reconcile_holds_observed (sku_id, drift, fence),
    KEY reconcile_holds_status (status),
    CONSTRAINT reconcile_holds_status_valid CHECK (status IN ('PENDING', 'APPROVED', 'REJECTED', 'APPLIED'))
);

-- +goose Down
DROP TABLE IF EXISTS reconcile_holds;

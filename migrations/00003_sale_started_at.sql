-- The per-user limit counts a buyer's units in the current sale of a SKU,
-- not in every sale the SKU id ever had: PutSKU (a reset before a sale)
-- moves sale_started_at, and the limit counts orders created since.
-- Existing rows start their sale at their creation, which counts every
-- order as before.

-- +goose Up
ALTER TABLE inventory ADD COLUMN sale_started_at DATETIME(3) NOT NULL DEFAULT '1970-01-01 00:00:00.000';
UPDATE inventory SET sale_started_at = created_at;

-- +goose Down
ALTER TABLE inventory DROP COLUMN sale_started_at;

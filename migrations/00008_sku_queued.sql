-- Whether a SKU is sold through a fair (queued) sale (issue 35).
--
-- A buy of a queued SKU needs its sale's pass, which Redis holds. While
-- Redis does not answer, an API instance must still know which SKUs are
-- queued to refuse their buys, and a process that just started remembers
-- none: MySQL tells it. A PUT of the SKU sets it (`queued`), and so does
-- the start of a sale; the preheat copies it to Redis, where it refuses
-- every buy of the SKU until its sale is created, so nothing is sold in
-- the window between the PUT and `sale start`. Existing SKUs are unqueued,
-- as they were sold.

-- +goose Up
ALTER TABLE inventory ADD COLUMN queued BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE inventory DROP COLUMN queued;

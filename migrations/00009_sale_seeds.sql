-- A fair sale's seed, kept out of Redis until the open.
--
-- The shuffle ranks the pre-queue by the seed, so whoever reads the seed
-- before the open knows every rank. Redis holds only its commitment (the
-- SHA-256) until the ranks are written; the seed itself waits here, one
-- row per sale (the sale workflow's run id), written once by the sale's
-- PrepareSale and read by its OpenSale. It stays after the open: it is
-- public from then on (the sale's history and queue answers reveal it).

-- +goose Up
CREATE TABLE sale_seeds (
    sale_id    VARCHAR(64) NOT NULL PRIMARY KEY,
    sku_id     VARCHAR(64) NOT NULL,
    seed       CHAR(64)    NOT NULL,
    created_at DATETIME(3) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE sale_seeds;

package orderdb

import (
	"context"
	"fmt"
)

// A fair sale's seed waits here until the open (sale_seeds): Redis holds
// only its commitment, so whoever can read Redis cannot know the ranks in
// advance (docs/design/fair-sale.md).

// KeepSaleSeed stores seed as saleID's seed unless the sale has one, and
// returns the one stored: a retried PrepareSale keeps the first seed, whose
// commitment it published.
func (s *Store) KeepSaleSeed(ctx context.Context, saleID, sku, seed string) (string, error) {
	if err := s.db.WithContext(ctx).Exec(`INSERT IGNORE INTO sale_seeds (sale_id, sku_id, seed, created_at) VALUES (?, ?, ?, ?)`,
		saleID, sku, seed, now()).Error; err != nil {
		return "", fmt.Errorf("keep seed of sale %s: %w", saleID, classify(err, nil))
	}
	kept, err := s.SaleSeed(ctx, saleID)
	if err == nil && kept == "" {
		err = fmt.Errorf("keep seed of sale %s: not stored", saleID)
	}
	return kept, err
}

// SaleSeed is saleID's seed, "" when none was kept (a sale prepared before
// seeds left Redis).
func (s *Store) SaleSeed(ctx context.Context, saleID string) (string, error) {
	var seeds []string
	if err := s.db.WithContext(ctx).Raw(`SELECT seed FROM sale_seeds WHERE sale_id = ?`, saleID).Scan(&seeds).Error; err != nil {
		return "", fmt.Errorf("seed of sale %s: %w", saleID, classify(err, nil))
	}
	if len(seeds) == 0 {
		return "", nil
	}
	return seeds[0], nil
}

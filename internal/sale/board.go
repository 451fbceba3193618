package sale

import (
	"context"
	"fmt"
	"time"
)

// Board is a sale's public figures, read without moving anything: the
// live sale page's queue and the final report's fairness figures.
type Board struct {
	State State `json:"state"`
	// Entrants is how many buyers the shuffle ranked; Queued is everyone
	// in the queue (before the open: everyone entered so far).
	Entrants int64 `json:"entrants"`
	Queued   int64 `json:"queued"`
	// Serving is the serving counter: the highest rank a pass was issued
	// to, so also how many passes were issued.
	Serving int64 `json:"serving"`
	// Outstanding is how many passes are issued and neither spent nor
	// expired; Spent how many bought their unit.
	Outstanding int64     `json:"outstanding"`
	Spent       int64     `json:"spent"`
	OpensAt     time.Time `json:"opens_at"`
	// Capacity is the live placement capacity (the sum the serving counter
	// bounds the passes outstanding by).
	Capacity int64 `json:"capacity"`
}

// BoardOf reads sku's Board; NoSale for a SKU without a sale.
func (s *Store) BoardOf(ctx context.Context, sku string) (_ Board, err error) {
	defer outage(&err)
	if err := checkSKU(sku); err != nil {
		return Board{}, err
	}
	res, err := boardScript.Run(ctx, s.rdb, keys(sku)).Slice()
	if err != nil {
		return Board{}, fmt.Errorf("sale board of %s: %w", sku, err)
	}
	b := Board{State: State(res[0].(string)), Entrants: res[1].(int64), Queued: res[2].(int64), Serving: res[3].(int64),
		Outstanding: res[4].(int64), Spent: res[5].(int64), OpensAt: time.UnixMilli(res[6].(int64)).UTC(),
		Capacity: res[7].(int64)}
	if b.State == "" {
		return Board{}, noSale(sku)
	}
	return b, nil
}

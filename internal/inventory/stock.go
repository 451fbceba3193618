package inventory

import (
	"context"
	"errors"
	"fmt"

	"github.com/flashsale/flashsale"

	"github.com/redis/go-redis/v9"
)

// PreheatResult is what Preheat found in Redis after writing.
type PreheatResult struct {
	RedisAvailable int64 `json:"redis_available"`
	Buckets        int   `json:"buckets"`
}

// Preheat loads available units of sku into buckets buckets before a sale
// opens: an even split, the remainder going to the lowest buckets. It
// overwrites bucket stock (so it must not run while the sale is live),
// deletes the stock of buckets a previous preheat had beyond the new count,
// sets the bucket count and bumps gen, which clears the sold-out flag.
//
// It then reads the buckets back and returns a PreheatMismatch error, wrapped
// with both totals, if they do not sum to available: selling from Redis that
// disagrees with the database would oversell (MySQL refuses, drift grows) or
// undersell (buyers told "sold out" while the database has units).
func (s *Store) Preheat(ctx context.Context, sku string, available int64, buckets int) (_ PreheatResult, err error) {
	defer codeOutage(&err)
	if err := validateLoad(sku, available, buckets); err != nil {
		return PreheatResult{}, fmt.Errorf("preheat %s: %w", sku, err)
	}

	// The previous count tells which bucket keys would be left behind; the
	// history and epoch, which buckets a cached layout may lead to.
	oldN, stampN := 0, buckets
	vals, err := s.rdb.MGet(ctx, bucketsKey(sku), layoutsKey(sku), epochKey(sku)).Result()
	if err != nil {
		return PreheatResult{}, fmt.Errorf("preheat %s: read bucket count: %w", sku, err)
	}
	old, err := parseLayout(vals[0], vals[1], vals[2])
	switch {
	case vals[0] == nil:
	case err != nil:
		// A corrupt count is overwritten below; clean up as far as the
		// largest possible layout so no stale bucket survives.
		oldN, stampN = flashsale.MaxBuckets, flashsale.MaxBuckets
	default:
		oldN, stampN = old.n, max(old.probe, buckets)
	}
	// A new count is a new layout: every process that cached the old one
	// must have its takes refused, so the buckets are stamped with the
	// next epoch before it is written (layoutcache.go).
	epoch := nextEpoch(old.epoch)
	if err := s.stampBuckets(ctx, sku, stampN, epoch); err != nil {
		return PreheatResult{}, fmt.Errorf("preheat %s: %w", sku, err)
	}

	// The keys live in different slots, so this cannot be one transaction;
	// the read-back below is what proves the result. Stock is written before
	// the count so a reader that sees the new count finds its buckets.
	pipe := s.rdb.Pipeline()
	for b := range buckets {
		pipe.Set(ctx, stockKey(sku, b), evenShare(available, buckets, b), 0)
	}
	// Count and epoch in one MSET (one slot): no reader sees one without
	// the other.
	pipe.MSet(ctx, bucketsKey(sku), buckets, epochKey(sku), epoch)
	for b := buckets; b < oldN; b++ {
		pipe.Del(ctx, stockKey(sku, b))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return PreheatResult{}, fmt.Errorf("preheat %s: write buckets: %w", sku, err)
	}
	if err := s.bump(ctx, sku); err != nil {
		return PreheatResult{}, fmt.Errorf("preheat %s: bump: %w", sku, err)
	}
	s.layouts.forget(sku) // refused at its next take anyway; spare that round trip

	if s.beforeVerify != nil {
		s.beforeVerify(sku)
	}
	res, err := s.verifyPreheat(ctx, sku, available)
	if err != nil {
		return res, fmt.Errorf("preheat %s: %w", sku, err)
	}
	return res, nil
}

// verifyPreheat reads the bucket count and every bucket back from Redis and
// checks that they sum to available.
func (s *Store) verifyPreheat(ctx context.Context, sku string, available int64) (PreheatResult, error) {
	st, err := s.Stock(ctx, sku)
	if err != nil {
		return PreheatResult{}, fmt.Errorf("read back: %w", err)
	}
	res := PreheatResult{RedisAvailable: st.Available, Buckets: st.Buckets}
	if st.Available != available {
		return res, fmt.Errorf("redis buckets hold %d units, db has %d available: %w", st.Available, available, flashsale.Errorf(flashsale.PreheatMismatch, "preheat mismatch: redis buckets do not sum to db available stock"))
	}
	return res, nil
}

// Restock adds qty units to sku in the middle of a sale (returns from a
// cancelled payment reconciled in MySQL, a supplier top-up). The units go to
// bucket crc32(requestID)%N, and the request is idempotent by requestID for
// the held TTL: restock.lua sets the request marker and INCRBYs the stock in
// one step. announce (bump.lua) then clears the sold-out flag and publishes;
// it runs even when the request was a repeat, in case the first attempt died
// between the two. Returns whether this call added the units.
//
// The marker lives in the bucket the first attempt chose, so after a resize
// a repeat must find that bucket again (restockBucket), or it would add the
// units a second time under the new count. And units that land in a bucket
// a concurrent shrink removed are swept into a live one by announce, as a
// release's are. Known limit: two attempts of one request running at the
// same moment as a resize may each read a different count and both add.
func (s *Store) Restock(ctx context.Context, sku, requestID string, qty int64) (_ bool, err error) {
	defer codeOutage(&err)
	if err := validateSKU(sku); err != nil {
		return false, fmt.Errorf("restock %s: %w", sku, err)
	}
	if requestID == "" {
		return false, fmt.Errorf("restock %s: %w", sku, invalidf("empty request id"))
	}
	if qty <= 0 {
		return false, fmt.Errorf("restock %s: %w", sku, invalidf("quantity must be positive, got %d", qty))
	}
	lay, err := s.layout(ctx, sku)
	if err != nil {
		return false, fmt.Errorf("restock %s: %w", sku, err)
	}
	b, err := s.restockBucket(ctx, sku, requestID, lay)
	if err != nil {
		return false, fmt.Errorf("restock %s: %w", sku, err)
	}
	added, err := restockScript.Run(ctx, s.rdb,
		[]string{stockKey(sku, b), restockKey(sku, b, requestID)},
		qty, s.heldMs).Int64()
	if err != nil {
		return false, fmt.Errorf("restock %s: bucket %d: %w", sku, b, err)
	}
	if err := s.announce(ctx, sku, []int{b}); err != nil {
		return false, fmt.Errorf("restock %s: bump: %w", sku, err)
	}
	return added == 1, nil
}

// restockBucket picks the bucket of a restock request: the one an earlier
// attempt marked, under any count the SKU has had, else crc32(requestID)%N.
func (s *Store) restockBucket(ctx context.Context, sku, requestID string, lay layout) (int, error) {
	m, _, err := s.markedCount(ctx, sku, requestID, lay, restockKey)
	if err != nil {
		return 0, fmt.Errorf("find the bucket of an earlier attempt: %w", err)
	}
	return startBucket(requestID, m), nil
}

// Stock is a snapshot of a SKU's Redis stock. The buckets are read in one
// pipeline but not atomically (they live in different slots), so during a
// sale the numbers are approximate.
type Stock struct {
	SKU       string
	Buckets   int
	PerBucket []int64
	Available int64 // sum of PerBucket
	SoldOut   bool
	Drift     int64
	// BookingsLeft is the count of bookings left of a SKU that deducts at
	// payment (booking.go); nil for one that deducts at the order.
	BookingsLeft *int64
}

// Stock reads a snapshot of sku's buckets, flag and drift counter. It
// returns an UnknownSKU error if the SKU was never preheated.
func (s *Store) Stock(ctx context.Context, sku string) (_ Stock, err error) {
	defer codeOutage(&err)
	if err := validateSKU(sku); err != nil {
		return Stock{}, fmt.Errorf("stock %s: %w", sku, err)
	}
	// SKU-level keys share a slot: one MGET.
	vals, err := s.rdb.MGet(ctx, bucketsKey(sku), soldOutKey(sku), driftKey(sku), bookingsKey(sku)).Result()
	if err != nil {
		return Stock{}, fmt.Errorf("stock %s: %w", sku, err)
	}
	n, err := parseBuckets(vals[0])
	if err != nil {
		return Stock{}, fmt.Errorf("stock %s: %w", sku, err)
	}
	drift, err := parseInt(vals[2])
	if err != nil {
		return Stock{}, fmt.Errorf("stock %s: drift: %w", sku, err)
	}
	deduct, left, err := parseBookings(vals[3])
	if err != nil {
		return Stock{}, fmt.Errorf("stock %s: %w", sku, err)
	}

	// A missing bucket reads as 0; Preheat's check catches it.
	per, err := s.readBuckets(ctx, sku, n)
	if err != nil {
		return Stock{}, fmt.Errorf("stock %s: %w", sku, err)
	}
	st := Stock{SKU: sku, Buckets: n, PerBucket: per, SoldOut: vals[1] != nil, Drift: drift}
	if deduct == flashsale.DeductPayment {
		st.BookingsLeft = &left
	}
	for _, v := range per {
		st.Available += v
	}
	return st, nil
}

// Exhausted reports whether a buy now would be refused SOLD_OUT: the flag
// is set, the buckets are empty, or a SKU that deducts at payment has no
// booking left. Units or bookings come back when an unpaid order closes.
func (st Stock) Exhausted() bool {
	return st.SoldOut || st.Available == 0 || (st.BookingsLeft != nil && *st.BookingsLeft <= 0)
}

// SoldOut reports the sold-out flag with one GET. It is a hint for turning
// buyers away early, not an answer: only Reserve decides.
func (s *Store) SoldOut(ctx context.Context, sku string) (_ bool, err error) {
	defer codeOutage(&err)
	if err := validateSKU(sku); err != nil {
		return false, fmt.Errorf("sold out %s: %w", sku, err)
	}
	err = s.rdb.Get(ctx, soldOutKey(sku)).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sold out %s: %w", sku, err)
	}
	return true, nil
}

// RecordDrift adds qty to the SKU's drift counter: units Redis handed out
// to orderID that MySQL then refused. It counts each order once (for the
// held TTL), so a retried activity does not count the refusal twice. A
// reconciliation job reads the counter via Stock.
func (s *Store) RecordDrift(ctx context.Context, sku, orderID string, qty int64) (err error) {
	defer codeOutage(&err)
	if err := validateOrder(orderID, sku); err != nil {
		return fmt.Errorf("record drift %s: %w", sku, err)
	}
	if qty <= 0 {
		return fmt.Errorf("record drift %s: %w", sku, invalidf("quantity must be positive, got %d", qty))
	}
	err = driftScript.Run(ctx, s.rdb, []string{driftKey(sku), driftRecordKey(sku, orderID)}, qty, s.heldMs).Err()
	if err != nil {
		return fmt.Errorf("record drift %s: %w", sku, err)
	}
	return nil
}

// Availability is a cheap read of how many units a SKU has left in Redis,
// with the generation it was read at.
type Availability struct {
	Buckets int
	// Gen is the generation read BEFORE the buckets, for MarkSoldOut.
	Gen int64
	// Units is the sum of the buckets; negative buckets (tampering) count
	// as empty, like take.lua treats them.
	Units int64
	// SoldOut is the sold-out flag, read in the same round trip as the
	// bucket count and gen (they share the SKU's slot). When it is set the
	// buckets are not read and Units is 0: the flag is only ever set for a
	// generation whose buckets were seen empty, and any restock clears it.
	SoldOut bool
	// Allowance is the buyer's limit and units held (AvailableTo only;
	// zero when Redis knows no limit).
	Allowance Allowance
	// Deduct is when a buy of the SKU takes its unit, as Redis says it:
	// DeductPayment while it holds a count of the SKU's bookings left,
	// DeductHold while it holds none. It is the very test book.lua makes,
	// read in the same MGET, so the order can skip the booking call of a
	// SKU that takes none (contract.ReserveStockInput.Deduct).
	Deduct flashsale.Deduct
}

// Available sums sku's buckets: one MGET of the bucket count and generation,
// then one pipeline of GETs. It is what an API edge reads to size admission
// before it lets an order reach Temporal; like Stock it is a snapshot, not a
// promise (only Reserve takes units). It returns an UnknownSKU error if the SKU was
// never preheated.
func (s *Store) Available(ctx context.Context, sku string) (_ Availability, err error) {
	defer codeOutage(&err)
	return s.AvailableTo(ctx, sku, "")
}

// AvailableTo is Available that also reads userID's allowance (the SKU's
// per-buyer limit and the units the buyer holds, limit.go) in the same
// MGET: the keys share the SKU's slot, so the edge turns a buyer at the
// limit away at no extra round trip. An empty userID reads no allowance.
func (s *Store) AvailableTo(ctx context.Context, sku, userID string) (_ Availability, err error) {
	defer codeOutage(&err)
	if err := validateSKU(sku); err != nil {
		return Availability{}, fmt.Errorf("available %s: %w", sku, err)
	}
	keys := []string{bucketsKey(sku), genKey(sku), soldOutKey(sku), bookingsKey(sku)}
	if userID != "" {
		keys = append(keys, limitKey(sku), heldKey(sku, userID))
	}
	vals, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return Availability{}, fmt.Errorf("available %s: %w", sku, err)
	}
	var allow Allowance
	if userID != "" {
		if allow, err = parseAllowance(vals[4], vals[5]); err != nil {
			return Availability{}, fmt.Errorf("available %s: %w", sku, err)
		}
	}
	n, err := parseBuckets(vals[0])
	if err != nil {
		return Availability{}, fmt.Errorf("available %s: %w", sku, err)
	}
	gen, err := parseInt(vals[1])
	if err != nil {
		return Availability{}, fmt.Errorf("available %s: gen: %w", sku, err)
	}
	deduct, left, err := parseBookings(vals[3])
	if err != nil {
		return Availability{}, fmt.Errorf("available %s: %w", sku, err)
	}
	if vals[2] != nil {
		return Availability{Buckets: n, Gen: gen, SoldOut: true, Allowance: allow, Deduct: deduct}, nil
	}
	per, err := s.readBuckets(ctx, sku, n)
	if err != nil {
		return Availability{}, fmt.Errorf("available %s: %w", sku, err)
	}
	av := Availability{Buckets: n, Gen: gen, Allowance: allow, Deduct: deduct}
	for _, v := range per {
		av.Units += max(v, 0)
	}
	if deduct == flashsale.DeductPayment {
		// A buy needs a booking too: no more orders start than bookings
		// are left (booking.go).
		av.Units = min(av.Units, left)
	}
	return av, nil
}

// MarkSoldOut sets the sold-out flag for an observation of zero units made
// at generation gen (Availability.Gen). soldout.lua refuses when gen moved
// since, because units may have come back into a bucket already read; the
// flag must never hide stock that is there. Reports whether it was set.
func (s *Store) MarkSoldOut(ctx context.Context, sku string, gen int64) (_ bool, err error) {
	defer codeOutage(&err)
	if err := validateSKU(sku); err != nil {
		return false, fmt.Errorf("mark sold out %s: %w", sku, err)
	}
	set, err := soldOutScript.Run(ctx, s.rdb, []string{genKey(sku), soldOutKey(sku)}, gen, s.soldOutMs).Int64()
	if err != nil {
		return false, fmt.Errorf("mark sold out %s: %w", sku, err)
	}
	return set == 1, nil
}

// readBuckets reads buckets 0..n-1 of sku in one pipeline. A missing bucket
// reads as 0; a negative one (tampering) is returned as it is, for the
// caller to count.
func (s *Store) readBuckets(ctx context.Context, sku string, n int) ([]int64, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, n)
	for b := range cmds {
		cmds[b] = pipe.Get(ctx, stockKey(sku, b))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read buckets: %w", err)
	}
	per := make([]int64, n)
	for b, cmd := range cmds {
		v, err := cmd.Int64()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("bucket %d: %w", b, err)
		}
		per[b] = v
	}
	return per, nil
}

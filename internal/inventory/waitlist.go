package inventory

// Waitlist: buyers answered "sold out" queue per SKU; a unit released by an
// expired or cancelled order is offered to the first of them before it goes
// back on open sale. The keys are in the SKU's slot (keys.go).

import (
	"context"
	"errors"
	"fmt"

	"github.com/flashsale/flashsale"

	"github.com/redis/go-redis/v9"
)

// WaitlistEntry is a user's place in a SKU's waitlist.
type WaitlistEntry struct {
	SKU      string `json:"sku_id"`
	UserID   string `json:"user_id"`
	Position int64  `json:"position"` // 1 is next
	// Joined is false when the user was already waiting (a repeated join).
	Joined bool `json:"-"`
}

// JoinWaitlist queues userID for sku, once: a repeated join answers the
// user's current position. Joining is allowed only when no bucket holds a
// unit (NotSoldOut otherwise), the SKU is known (UnknownSKU) and
// fewer than capacity users wait (WaitlistFull).
//
// The sold-out check and the push are not one atomic step (the buckets live
// in other slots); that race is harmless: a unit that comes back just after
// the check is on open sale, where the waiting user may buy it too, and the
// next released unit is offered to them anyway.
func (s *Store) JoinWaitlist(ctx context.Context, sku, userID string, capacity int64) (_ WaitlistEntry, err error) {
	return s.JoinWaitlistRanked(ctx, sku, userID, 0, capacity)
}

// JoinWaitlistRanked is JoinWaitlist for a buyer holding rank in sku's
// fair sale (rank 0: none, the FIFO list). Ranked buyers wait in rank
// order, whenever each joins, and are offered units before anyone on the
// list: a sale's buyers told SOLD_OUT keep the order the shuffle gave them.
func (s *Store) JoinWaitlistRanked(ctx context.Context, sku, userID string, rank, capacity int64) (_ WaitlistEntry, err error) {
	defer codeOutage(&err)
	if err := validateSKU(sku); err != nil {
		return WaitlistEntry{}, fmt.Errorf("join waitlist %s: %w", sku, err)
	}
	if userID == "" || capacity <= 0 || rank < 0 {
		return WaitlistEntry{}, fmt.Errorf("join waitlist %s: %w", sku, invalidf("want a user, a rank >= 0 and a capacity > 0: rank %d, capacity %d", rank, capacity))
	}
	st, err := s.Stock(ctx, sku)
	if err != nil {
		return WaitlistEntry{}, fmt.Errorf("join waitlist %s: %w", sku, err)
	}
	if st.Available > 0 {
		return WaitlistEntry{}, fmt.Errorf("join waitlist %s: %d units on sale: %w", sku, st.Available, flashsale.Errorf(flashsale.NotSoldOut, "not sold out"))
	}
	res, err := waitlistJoinScript.Run(ctx, s.rdb, []string{waitlistKey(sku), waitlistUsersKey(sku), waitlistRankedKey(sku)},
		userID, s.heldMs, capacity, rank).Int64Slice()
	if err != nil {
		return WaitlistEntry{}, fmt.Errorf("join waitlist %s: %w", sku, err)
	}
	if len(res) != 2 {
		return WaitlistEntry{}, fmt.Errorf("join waitlist %s: unexpected reply %v", sku, res)
	}
	if res[0] < 0 {
		return WaitlistEntry{}, fmt.Errorf("join waitlist %s: %d waiting: %w", sku, capacity, flashsale.Errorf(flashsale.WaitlistFull, "waitlist full"))
	}
	return WaitlistEntry{SKU: sku, UserID: userID, Position: res[0], Joined: res[1] == 1}, nil
}

// PopWaitlist takes the first waiting user of sku for the units released by
// releasedOrderID and returns it, or "" when nobody waits. It is idempotent
// per released order: a retry returns the same answer and pops nobody else.
// While the SKU's fair sale is PAUSED nobody is offered the units: they go
// back on sale, where only a pass buys them, once the sale resumes.
func (s *Store) PopWaitlist(ctx context.Context, sku, releasedOrderID string) (_ string, err error) {
	defer codeOutage(&err)
	if err := validateOrder(releasedOrderID, sku); err != nil {
		return "", fmt.Errorf("pop waitlist %s: %w", sku, err)
	}
	user, err := waitlistPopScript.Run(ctx, s.rdb,
		[]string{waitlistKey(sku), waitlistUsersKey(sku), offerKey(sku, releasedOrderID), waitlistOffersKey(sku), waitlistRankedKey(sku),
			saleKey(sku)},
		s.heldMs, releasedOrderID).Text()
	if err != nil {
		return "", fmt.Errorf("pop waitlist %s for order %s: %w", sku, releasedOrderID, err)
	}
	return user, nil
}

// WaitlistPlace is where a user stands on a SKU's waitlist: waiting at
// Position, or offered the units of the released order OfferedFrom.
type WaitlistPlace struct {
	Position    int64
	OfferedFrom string
}

// WaitlistPlace looks userID up on sku's waitlist: their position while
// they wait, else the released order whose units were offered to them (the
// latest, if several), else NotOnWaitlist. The reads are in the SKU's slot
// and sent together.
func (s *Store) WaitlistPlace(ctx context.Context, sku, userID string) (_ WaitlistPlace, err error) {
	defer codeOutage(&err)
	if err := validateSKU(sku); err != nil {
		return WaitlistPlace{}, fmt.Errorf("waitlist place %s: %w", sku, err)
	}
	var pos, ranked, rankedLen *redis.IntCmd
	var offer *redis.StringCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		ranked = p.ZRank(ctx, waitlistRankedKey(sku), userID)
		rankedLen = p.ZCard(ctx, waitlistRankedKey(sku))
		pos = p.LPos(ctx, waitlistKey(sku), userID, redis.LPosArgs{})
		offer = p.HGet(ctx, waitlistOffersKey(sku), userID)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return WaitlistPlace{}, fmt.Errorf("waitlist place %s: %w", sku, err)
	}
	if n, err := ranked.Result(); err == nil {
		return WaitlistPlace{Position: n + 1}, nil
	}
	if n, err := pos.Result(); err == nil {
		// The ranked buyers are served first.
		return WaitlistPlace{Position: rankedLen.Val() + n + 1}, nil
	}
	if from, err := offer.Result(); err == nil && from != "" {
		return WaitlistPlace{OfferedFrom: from}, nil
	}
	return WaitlistPlace{}, fmt.Errorf("waitlist place in %s: %w", sku, flashsale.Errorf(flashsale.NotOnWaitlist, "not on the waitlist"))
}

// Transfer hands the qty units fromOrder holds in sku to toOrder, bucket by
// bucket, without moving bucket stock: the units never reappear on open sale
// in between, and fromOrder's markers become released markers, so a late
// Release of fromOrder moves nothing. The result is toOrder's reservation,
// as Reserve would have returned it.
//
// Transfer is idempotent: a retry finds toOrder's markers and replays them.
// If fromOrder does not hold exactly qty units (its markers expired or were
// released) the answer is SoldOut; if toOrder was released already,
// AlreadyReleased. Either way whatever either order still held is released to
// open sale first, so a failed hand-over never leaves a unit held by an
// order nobody will release.
//
// Transfer probes the current N buckets. Markers in buckets a shrink
// removed are not handed over; the failed hand-over then releases them.
func (s *Store) Transfer(ctx context.Context, fromOrder, toOrder, sku string, qty int64) (_ flashsale.Reservation, err error) {
	defer codeOutage(&err)
	return s.TransferTo(ctx, "", fromOrder, toOrder, sku, qty)
}

// TransferTo is Transfer for toOrder of buyer userID, counted for the
// buyer as ReserveFor counts (limit.go) but never refused on the limit: a
// waiting buyer who holds it by now is refused by MySQL, and the offer's
// compensation hands the unit on to the next waiting buyer. After the hand-over the released order's count is given back
// to its own buyer, so its units are counted once, for the new holder.
func (s *Store) TransferTo(ctx context.Context, userID, fromOrder, toOrder, sku string, qty int64) (_ flashsale.Reservation, err error) {
	defer codeOutage(&err)
	if err := validateOrder(fromOrder, sku); err != nil {
		return flashsale.Reservation{}, fmt.Errorf("transfer %s: %w", sku, err)
	}
	if err := validateOrder(toOrder, sku); err != nil {
		return flashsale.Reservation{}, fmt.Errorf("transfer %s: %w", sku, err)
	}
	if fromOrder == toOrder || qty <= 0 {
		return flashsale.Reservation{}, fmt.Errorf("transfer %s: %w", sku, invalidf("transfer %d units from %s to %s", qty, fromOrder, toOrder))
	}
	n, err := s.bucketCount(ctx, sku)
	if err != nil {
		return flashsale.Reservation{}, fmt.Errorf("transfer %s: %w", sku, err)
	}
	// Counted even past the limit: the unit is on its way to this buyer,
	// and MySQL's refusal of the offer (LimitExceeded) passes it on to the
	// next waiting buyer, where a refusal here would drop it to open sale.
	if err := s.claim(ctx, userID, toOrder, sku, qty, true); err != nil {
		return flashsale.Reservation{}, fmt.Errorf("transfer %s: %w", sku, err)
	}
	calls := make([]scriptCall, n)
	for b := range calls {
		calls[b] = scriptCall{
			keys: []string{orderKey(sku, b, fromOrder), orderKey(sku, b, toOrder)},
			args: []any{s.heldMs},
		}
	}
	cmds, err := s.evalPipelined(ctx, transferScript, calls)
	if err != nil {
		return flashsale.Reservation{}, fmt.Errorf("transfer %s: %w", sku, err)
	}
	var got int64
	var parts []flashsale.Part
	released := false
	for b, cmd := range cmds {
		res, err := cmd.Int64Slice()
		if err != nil {
			return flashsale.Reservation{}, fmt.Errorf("transfer %s: bucket %d: %w", sku, b, err)
		}
		if len(res) != 2 {
			return flashsale.Reservation{}, fmt.Errorf("transfer %s: bucket %d: unexpected reply %v", sku, b, res)
		}
		switch status, k := res[0], res[1]; status {
		case 1, 2:
			if k > 0 {
				got += k
				parts = append(parts, flashsale.Part{Bucket: b, Quantity: k})
			}
		case -2:
			released = true
		}
	}
	if got == qty && !released {
		// The units are toOrder's now; the released order's buyer holds
		// them no more. Idempotent, so a retried hand-over repeats it.
		if _, err := s.unclaim(ctx, fromOrder, sku, modeRelease); err != nil {
			return flashsale.Reservation{}, fmt.Errorf("transfer %s: order %s: %w", sku, fromOrder, err)
		}
		return flashsale.Reservation{SKU: sku, Quantity: qty, Parts: parts}, nil
	}
	// The hand-over failed: the receiving order was released meanwhile,
	// or the giving order held another quantity or nothing here (markers
	// expired, or left in buckets a resize removed). Nobody would ever
	// release units left under either order, so both are released now,
	// through Release so every bucket the SKU ever had is visited: the
	// units go back on open sale (Release clears the sold-out flag) rather
	// than to a waiting buyer with a wrong quantity.
	if _, err := s.Release(ctx, toOrder, sku); err != nil {
		return flashsale.Reservation{}, fmt.Errorf("transfer %s: give back order %s: %w", sku, toOrder, err)
	}
	if _, err := s.Release(ctx, fromOrder, sku); err != nil {
		return flashsale.Reservation{}, fmt.Errorf("transfer %s: give back order %s: %w", sku, fromOrder, err)
	}
	if released {
		return flashsale.Reservation{}, fmt.Errorf("transfer %s: order %s: %w", sku, toOrder, flashsale.Errorf(flashsale.AlreadyReleased, "reservation already released"))
	}
	return flashsale.Reservation{}, fmt.Errorf("transfer %s: order %s held %d of %d units: %w", sku, fromOrder, got, qty, flashsale.Errorf(flashsale.SoldOut, "sold out"))
}

// CloseWaitlist empties sku's waitlist: nobody waits from now on, so a unit
// an unpaid order gives back goes to open sale instead of becoming an
// order (a fair sale's close; nothing is sold after it). Offers already
// made stay readable (GET .../waitlist/me). Idempotent.
func (s *Store) CloseWaitlist(ctx context.Context, sku string) (err error) {
	defer codeOutage(&err)
	if err := validateSKU(sku); err != nil {
		return fmt.Errorf("close waitlist %s: %w", sku, err)
	}
	// One slot: one DEL.
	if err := s.rdb.Del(ctx, waitlistKey(sku), waitlistRankedKey(sku), waitlistUsersKey(sku)).Err(); err != nil {
		return fmt.Errorf("close waitlist %s: %w", sku, err)
	}
	return nil
}

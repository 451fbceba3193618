// Package queueing is the fair sale's queue use cases, as buying is the
// buy's: a buyer enters a sale's queue (Enter) and reads their place and,
// once their turn came, their pass (Me), optionally holding the look until
// the turn comes (a long poll). Each spends one of the buyer's queue
// requests at the gate (internal/edge) and is one Lua script in the SKU's
// slot (internal/sale), never the sale's workflow. The HTTP door
// authenticates, reads the SKU and ?wait=, calls one function and encodes
// its answer.
package queueing

import (
	"context"
	"time"

	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/sale"
)

// Service runs the queue's use cases. Every field is required.
type Service struct {
	// Gate rate-limits each buyer's queue requests (edge.ScopeQueue).
	Gate *edge.Gate
	// Door holds the sales' store and signs the passes it issues.
	Door *sale.Door
	// Waits holds the long polls of Me; its owner closes it.
	Waits *sale.Waits
	// LookTimeout bounds each step that asks Redis: the rate limit with
	// the first look, and the look after a wait (a wait has its own bound).
	LookTimeout time.Duration
}

// Place is a buyer's place in a sale with their pass while it may be
// spent: the answer of GET /api/v1/skus/{sku}/queue/me.
type Place struct {
	sale.Place
	// Pass is the buyer's pass while it may be spent: send it as the
	// Sale-Pass header of POST /api/v1/orders before PassExpiresAt.
	Pass          string    `json:"pass,omitempty"`
	PassExpiresAt time.Time `json:"pass_expires_at,omitzero"`
}

// Enter puts buyer in sku's queue, once (sale.Store.Enter): Ticket.Entered
// says it entered now rather than was already in. The errors are the
// gate's BUSY and RATE_LIMITED (RetryErrors) and the sale's NO_SALE and
// SALE_CLOSED.
func (s *Service) Enter(ctx context.Context, buyer, sku string) (sale.Ticket, error) {
	ctx, cancel := context.WithTimeout(ctx, s.LookTimeout)
	defer cancel()
	// An entry made after the open is ranked after everyone: it waits for
	// its slot as long as its step may take, rather than being BUSY behind
	// the crowd's looks and coming back late.
	release, err := s.Gate.AdmitQueue(ctx, s.LookTimeout)
	if err != nil {
		return sale.Ticket{}, err
	}
	defer release()
	if err := s.Gate.RateLimit(ctx, edge.ScopeQueue, buyer); err != nil {
		return sale.Ticket{}, err
	}
	return s.Door.Store().Enter(ctx, sku, buyer)
}

// Me is buyer's place in sku's sale (sale.Store.PlaceOf, which moves the
// serving counter on) with their pass once their turn came. With wait > 0
// a buyer still waiting for their turn is answered when it comes, when
// the SKU sells out or the sale leaves OPEN, or after wait, whichever is
// first (sale.Waits); ctx bounds the wait too. The errors are the gate's
// BUSY (no queue slot free in time) and RATE_LIMITED, and the sale's
// NO_SALE and NOT_IN_QUEUE.
func (s *Service) Me(ctx context.Context, buyer, sku string, wait time.Duration) (Place, error) {
	// A long poll's wait for its queue slot is part of the wait it asked
	// for: it is held for what is left.
	start := time.Now()
	p, err := s.look(ctx, buyer, sku, wait)
	if err != nil {
		return Place{}, err
	}
	if left := wait - time.Since(start); left > 0 && sale.Waiting(p) {
		if p, err = s.waitForTurn(ctx, p, left); err != nil {
			return Place{}, err
		}
	}
	return Place{Place: p, Pass: s.Door.Issue(p), PassExpiresAt: p.PassExpiry}, nil
}

// look spends one of buyer's queue requests and reads their place, in one
// of the instance's queue slots (edge.Gate.AdmitQueue: waiting for it up
// to patience), given back before any wait.
func (s *Service) look(ctx context.Context, buyer, sku string, patience time.Duration) (sale.Place, error) {
	ctx, cancel := context.WithTimeout(ctx, s.LookTimeout)
	defer cancel()
	release, err := s.Gate.AdmitQueue(ctx, patience)
	if err != nil {
		return sale.Place{}, err
	}
	defer release()
	if err := s.Gate.RateLimit(ctx, edge.ScopeQueue, buyer); err != nil {
		return sale.Place{}, err
	}
	return s.Door.Store().PlaceOf(ctx, sku, buyer)
}

// waitForTurn holds a waiting buyer's look and answers their place after
// it. Only a buyer the counter served looks again (for their pass): a
// sell-out is answered from the counter that saw it, without a look of
// each waiter's own (at that moment every waiter of the SKU is woken at
// once, and their answer is the same), and so is a wait that ended without
// news, from the counter the watcher read last: a crowd held from the open
// comes to the end of its waits together, and a look each would ask Redis
// for all of them at once, to read what the watcher read a moment before.
func (s *Service) waitForTurn(ctx context.Context, p sale.Place, wait time.Duration) (sale.Place, error) {
	c, woken := s.Waits.Wait(ctx, p.SKU, p.Rank, wait)
	switch {
	case woken && c.SoldOut, !woken && c.State != "":
		return p.At(c), nil
	}
	// Served, or not woken with no counter to trust: a look of their own,
	// outside the queue's slots, so a buyer whose pass came never waits
	// behind the crowd for it (the served are at most the passes the
	// counter issues at once).
	look, cancel := context.WithTimeout(ctx, s.LookTimeout)
	defer cancel()
	return s.Door.Store().PlaceOf(look, p.SKU, p.UserID)
}

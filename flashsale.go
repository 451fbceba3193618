// Package flashsale is the vocabulary every layer of the flash sale speaks:
// the nouns (an order, its items, its status, a SKU on sale), the limits on
// them, the one validation of each, and the coded Error that every store and
// client returns (error.go).
//
// It imports nothing of this module and no driver: the Redis and MySQL
// stores, the Temporal workflows and activities, the HTTP API and the CLI
// all import it, and each maps its codes once at its own door.
package flashsale

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Limits on what an order, a payment and a SKU may hold. Ids fit the MySQL
// columns they are stored in, so bad input fails here and never as a
// strict-mode "data too long" deep in a transaction.
const (
	MaxIDLength            = 64
	MaxTransactionIDLength = 128
	// MaxReasonLength is the size of the reason columns.
	MaxReasonLength = 255
	MaxItems        = 20
	MaxItemQuantity = 1000

	MaxSKUTotal = 1_000_000_000
	// MaxPrice keeps price x MaxItemQuantity x MaxItems far inside int64.
	MaxPrice        = 1_000_000_000_000
	MaxPerUserLimit = 1_000_000
	// MaxBuckets bounds a SKU's Redis stock buckets; DefaultBuckets is what
	// a SKU gets when nobody chose (see docs/design/buckets.md).
	MaxBuckets     = 1024
	DefaultBuckets = 16
)

// WaitlistOrderPrefix starts every waitlist offer's order id. Buyers may not
// choose ids with it: a buyer's order under an offer's id would take the
// offer's workflow id and database row.
const WaitlistOrderPrefix = "wl-"

// Item is one line of an order: Quantity units of SKU. UnitPrice is the
// price MySQL charged when the order was written; it is ignored on input.
type Item struct {
	SKU       string `json:"sku_id"`
	Quantity  int64  `json:"quantity"`
	UnitPrice int64  `json:"unit_price,omitempty"`
}

// Order is what a buyer asks for: an order id (the idempotency key of the
// whole purchase), the buyer, and the lines.
type Order struct {
	OrderID string `json:"order_id"`
	UserID  string `json:"user_id"`
	Items   []Item `json:"items"`
	// FromOrder is set on a waitlist offer only: the expired or cancelled
	// order whose units this order takes over. Its id is then
	// WaitlistOrderID(FromOrder).
	FromOrder string `json:"from_order,omitempty"`
}

// Validate is the one check of an order, run before any stock moves so a
// bad request leaves nothing behind. Every problem is reported, as one
// Invalid error.
func (o Order) Validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(CheckID("order_id", o.OrderID, MaxIDLength))
	add(CheckID("user_id", o.UserID, MaxIDLength))
	switch {
	case o.FromOrder == "" && strings.HasPrefix(o.OrderID, WaitlistOrderPrefix):
		add(fmt.Errorf("order ids starting with %s are reserved for waitlist offers", WaitlistOrderPrefix))
	case o.FromOrder != "" && o.OrderID != WaitlistOrderID(o.FromOrder):
		add(fmt.Errorf("a waitlist offer's order id must be %s", WaitlistOrderID(o.FromOrder)))
	}
	if len(o.Items) == 0 || len(o.Items) > MaxItems {
		add(fmt.Errorf("an order needs 1-%d items", MaxItems))
	}
	seen := make(map[string]bool, len(o.Items))
	for _, it := range o.Items {
		add(CheckID("sku_id", it.SKU, MaxIDLength))
		if it.Quantity < 1 || it.Quantity > MaxItemQuantity {
			add(fmt.Errorf("quantity of %q must be 1-%d", it.SKU, MaxItemQuantity))
		}
		if seen[it.SKU] {
			add(fmt.Errorf("sku %q appears twice; merge the lines", it.SKU))
		}
		seen[it.SKU] = true
	}
	if len(errs) == 0 {
		return nil
	}
	return &Error{Code: Invalid, Message: errors.Join(errs...).Error()}
}

// SKUs lists the order's SKU ids in line order.
func (o Order) SKUs() []string {
	ids := make([]string, len(o.Items))
	for i, it := range o.Items {
		ids[i] = it.SKU
	}
	return ids
}

// WaitlistOrderID is the order id of the offer made with the units of
// releasedOrderID: the reserved prefix and the first 128 bits of the
// released id's SHA-256, in hex (35 characters, whatever the released id).
// It is derived from the released order alone, so retries and replays can
// only ever start one offer per release, and it never contains the released
// id itself: an id that could be raw for one release and hashed for another
// (as it once was for long ids) lets a buyer who holds two orders make two
// releases name one offer, and the second offer take over the first's order.
// Offers made before this derivation keep their recorded ids
// (workflows/waitlist.go).
func WaitlistOrderID(releasedOrderID string) string {
	sum := sha256.Sum256([]byte(releasedOrderID))
	return WaitlistOrderPrefix + hex.EncodeToString(sum[:16])
}

// Status is an order's lifecycle state. MySQL stores the last four; the
// workflow reports all of them.
type Status string

const (
	// StatusReserving: the workflow is taking stock; the buyer is waiting.
	StatusReserving Status = "RESERVING"
	// StatusRejected: no stock was taken (sold out, unknown SKU, bad input).
	// A rejected order has no database row.
	StatusRejected Status = "REJECTED"
	// StatusPendingPayment is the only open state in MySQL.
	StatusPendingPayment Status = "PENDING_PAYMENT"
	// StatusStalled: the order is being closed but its compensation has not
	// finished within a minute of its deadline because a dependency keeps
	// failing. It keeps retrying (the units must come back) and reaches its
	// final status when it completes. Operators filter for it in the Web UI
	// (OrderStatus = "STALLED"). Not closed.
	StatusStalled   Status = "STALLED"
	StatusPaid      Status = "PAID"
	StatusExpired   Status = "EXPIRED"
	StatusCancelled Status = "CANCELLED"
)

// Closed reports whether the order can no longer change.
func (s Status) Closed() bool {
	switch s {
	case StatusRejected, StatusPaid, StatusExpired, StatusCancelled:
		return true
	}
	return false
}

// Reservation is the Redis stock one item of an order holds: Quantity units
// of SKU, and the buckets they came from (Parts, in the order the buckets
// were probed; only buckets that gave units appear). internal/inventory
// takes it and the order's activities carry it in their results.
type Reservation struct {
	SKU      string
	Quantity int64
	Parts    []Part
}

// Part is the units of a Reservation taken from one bucket.
type Part struct {
	Bucket   int   `json:"bucket"`
	Quantity int64 `json:"quantity"`
}

// PaymentStatus says what happened to money that arrived for an order: the
// store records it, the payment activity answers it, the audit reads it.
type PaymentStatus string

// Payment outcomes: CAPTURED paid the order; REFUND_REQUIRED money must be
// returned to the payer (order closed, already paid, or unknown).
const (
	PaymentCaptured       PaymentStatus = "CAPTURED"
	PaymentRefundRequired PaymentStatus = "REFUND_REQUIRED"
	// PaymentRefunded: money owed back that the provider has sent back.
	PaymentRefunded PaymentStatus = "REFUNDED"
)

// SaleState is where a fair sale stands (docs/design/fair-sale.md).
// SaleWorkflow decides it and internal/sale keeps it in Redis for the
// requests that read it.
type SaleState string

// States of a sale, in the order a sale goes through them (PAUSED and OPEN
// may alternate).
const (
	// SaleStatePrequeue: buyers enter; nobody may buy.
	SaleStatePrequeue SaleState = "PREQUEUE"
	// SaleStateShuffling: the entrants are frozen and being ranked; later
	// arrivals are ranked after them.
	SaleStateShuffling SaleState = "SHUFFLING"
	// SaleStateOpen: passes are issued and spent.
	SaleStateOpen SaleState = "OPEN"
	// SaleStatePaused: no pass is issued or spent; placed orders go on.
	SaleStatePaused SaleState = "PAUSED"
	// SaleStateClosed: the sale is over.
	SaleStateClosed SaleState = "CLOSED"
)

// OpenedSale is what opening a fair sale did: internal/sale opens it in
// Redis, SaleWorkflow records it from the OpenSale activity.
type OpenedSale struct {
	// Entrants is how many buyers entered before the freeze.
	Entrants int64 `json:"entrants"`
	// Seed is the revealed seed: with the entrants' ids, sale.Ranks
	// reproduces every rank.
	Seed string `json:"seed"`
	// State is the sale's state after the call: OPEN, or PAUSED or CLOSED
	// for a sale opened before.
	State SaleState `json:"state"`
}

// SKU is a product on sale: Total units at Price (minor currency units),
// spread over Buckets Redis keys, at most PerUserLimit units per buyer.
type SKU struct {
	ID           string `json:"sku_id"`
	Total        int64  `json:"total"`
	Price        int64  `json:"price"`
	Buckets      int    `json:"buckets"`
	PerUserLimit int    `json:"per_user_limit"`
	// Queued: the SKU is sold through a fair sale only. Until its sale is
	// started (and whenever its sale is not OPEN) every buy is refused,
	// and while Redis does not answer too (docs/design/fair-sale.md).
	Queued bool `json:"queued,omitempty"`
	// Terms: how it is sold (terms.go).
	Terms
}

// Validate checks a SKU definition against the limits: Invalid, or
// InvalidTerms for terms out of their bounds.
func (k SKU) Validate() error {
	if err := k.Terms.Validate(); err != nil {
		return err
	}
	var errs []error
	if err := CheckSKUID(k.ID); err != nil {
		errs = append(errs, err)
	}
	if k.Total < 0 || k.Total > MaxSKUTotal {
		errs = append(errs, fmt.Errorf("total must be 0-%d", MaxSKUTotal))
	}
	if k.Price < 0 || k.Price > MaxPrice {
		errs = append(errs, fmt.Errorf("price must be 0-%d minor units", MaxPrice))
	}
	if err := CheckBuckets(k.Buckets); err != nil {
		errs = append(errs, err)
	}
	if k.PerUserLimit < 1 || k.PerUserLimit > MaxPerUserLimit {
		errs = append(errs, fmt.Errorf("per_user_limit must be 1-%d", MaxPerUserLimit))
	}
	if len(errs) == 0 {
		return nil
	}
	return &Error{Code: Invalid, Message: errors.Join(errs...).Error()}
}

// CheckBuckets refuses a bucket count outside 1..MaxBuckets.
func CheckBuckets(n int) error {
	if n < 1 || n > MaxBuckets {
		return Errorf(Invalid, "buckets must be 1-%d", MaxBuckets)
	}
	return nil
}

// ValidID accepts the ids handed to Temporal, Redis and MySQL: 1 to max
// characters of [A-Za-z0-9._:@-], not "." or "..". The narrow alphabet keeps
// out what the layers below treat differently (trailing spaces MySQL
// ignores, braces that break Redis hash tags, control characters, invalid
// UTF-8); the dot segments would be resolved away in a URL path, so an order
// named "." could be created but never read or cancelled.
func ValidID(s string, max int) bool {
	if len(s) == 0 || len(s) > max || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '_', c == ':', c == '@', c == '-':
		default:
			return false
		}
	}
	return true
}

// ValidSKUID accepts the id of a SKU defined from now on: 1 to MaxIDLength
// characters of [A-Za-z0-9_-]. A SKU's id is inside its Redis keys' hash
// tags ({sku:<id>} for the SKU, {sku:<id>:b<i>} for bucket i), so an id
// with ':' names another SKU's bucket ("K:b1" is SKU K's bucket 1): the end
// of the sale of K:b1 removed K's stock (issue 35). Glob characters ('*',
// '?', '[') would widen a pattern made of the id. Orders still take
// ValidID's alphabet: a SKU defined before keeps selling.
func ValidSKUID(s string) bool {
	if len(s) == 0 || len(s) > MaxIDLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// CheckSKUID is ValidSKUID as an Invalid error.
func CheckSKUID(id string) error {
	if !ValidSKUID(id) {
		return Errorf(Invalid, "sku_id must be 1-%d characters of A-Z a-z 0-9 _ -", MaxIDLength)
	}
	return nil
}

// CheckID is ValidID as an Invalid error naming the field.
func CheckID(field, v string, max int) error {
	if !ValidID(v, max) {
		return Errorf(Invalid, "%s must be 1-%d characters of A-Z a-z 0-9 . _ : @ - (not . or ..)", field, max)
	}
	return nil
}

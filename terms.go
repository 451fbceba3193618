package flashsale

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Terms are how a SKU is sold, set with its definition (a PUT of the SKU,
// `starter sku create`): docs/operations.md, "Sale terms", says when to
// choose which. The zero value is the house default, what every SKU did
// before terms existed.
type Terms struct {
	// PaymentWindow is how long a buyer of the SKU has to pay, counted from
	// the moment the order is written (its pay_by). Zero: the worker's
	// PAYMENT_TIMEOUT. An order of several SKUs gets the shortest window
	// among them.
	PaymentWindow Duration `json:"payment_window,omitzero"`
	// LatePayment says what becomes of money that reaches the order after
	// its pay_by: refunded (LateRefund, the default), or captured while
	// the order still holds its units, before its compensation released
	// them (LateCaptureIfHeld). An order of several SKUs captures late
	// money only if every one of them says so.
	LatePayment LatePayment `json:"late_payment,omitempty"`
	// ReleaseOnFailedPayment: a FAILED payment callback closes the order
	// and puts its units back on sale at once, instead of holding them
	// until pay_by. An order of several SKUs releases if any says so.
	ReleaseOnFailedPayment bool `json:"release_on_failed_payment,omitempty"`
	// Deduct is when a buy takes its units (DeductHold, the default:
	// when the order is placed, held until pay_by; DeductPayment: when
	// the payment is applied, the buy taking a booking only).
	Deduct Deduct `json:"deduct,omitempty"`
	// Overbook bounds a DeductPayment SKU's open orders: at most
	// Overbook x its stock hold a booking (DefaultOverbook when zero).
	Overbook int `json:"overbook,omitempty"`
}

// Deduct is when a SKU's units are taken (Terms.Deduct).
type Deduct string

// The deduction timings; "" is DeductHold.
const (
	DeductHold    Deduct = "hold"
	DeductPayment Deduct = "payment"
)

// Overbooking of a DeductPayment SKU. Three bookings per unit sell the
// stock out in one wave whenever a third or more of the booked buyers pay
// (the demo's crowd pays 60%), while a flood still finds the bookings gone
// and is refused at the door, before any workflow starts; the refunds owed
// stay at most Overbook-1 per unit (docs/sale-terms.md).
const (
	DefaultOverbook = 3
	MaxOverbook     = 10
)

// OverbookOf is the SKU's overbooking factor in force.
func (t Terms) OverbookOf() int {
	if t.Overbook == 0 {
		return DefaultOverbook
	}
	return t.Overbook
}

// LatePayment is a SKU's rule for money after pay_by (Terms.LatePayment).
type LatePayment string

// The late-payment rules; "" is LateRefund.
const (
	LateRefund        LatePayment = "refund"
	LateCaptureIfHeld LatePayment = "capture_if_held"
)

// MaxHoldExtension bounds how long a payment provider may extend an
// order's hold, once, when its buyer starts paying: well inside the day of
// margin the Redis markers keep past the longest window.
const MaxHoldExtension = 30 * time.Minute

// HoldExtended refuses a second extension of an order's hold.
const HoldExtended Code = "HOLD_ALREADY_EXTENDED"

// The bounds of a payment window. The longest is bound by Redis: every
// key that stands for units an order holds (the take markers, the release
// tombstones, the buyer's limit claims, the edge's placed ids) lives
// MarkerTTL, the longest window plus a day of margin for the order's
// compensation and retries, so no key expires while an order may still
// need it. A longer window would lose units at each expiry, healed only by
// reconciliation: it is refused instead.
const (
	MinPaymentWindow = time.Minute
	MaxPaymentWindow = 72 * time.Hour
	// MarkerTTL is how long Redis keeps what an order took, and the bound
	// of every window (internal/inventory.DefaultHeldTTL).
	MarkerTTL = MaxPaymentWindow + 24*time.Hour
)

// InvalidTerms refuses a SKU's terms outside their bounds; its message
// names the term, the bounds and why.
const InvalidTerms Code = "INVALID_TERMS"

// Validate checks the terms against their bounds: InvalidTerms, naming
// every term out of bounds.
func (t Terms) Validate() error {
	var errs []error
	if w := t.PaymentWindow.D(); w != 0 && (w < MinPaymentWindow || w > MaxPaymentWindow) {
		errs = append(errs, fmt.Errorf("payment_window %s is outside %s-%s: Redis keeps an order's units for %s "+
			"(the longest window plus a day), so a longer window would lose units when its keys expire", t.PaymentWindow,
			Duration(MinPaymentWindow), Duration(MaxPaymentWindow), Duration(MarkerTTL)))
	}
	if t.LatePayment != "" && t.LatePayment != LateRefund && t.LatePayment != LateCaptureIfHeld {
		errs = append(errs, fmt.Errorf("late_payment must be %q or %q", LateRefund, LateCaptureIfHeld))
	}
	switch {
	case t.Deduct != "" && t.Deduct != DeductHold && t.Deduct != DeductPayment:
		errs = append(errs, fmt.Errorf("deduct must be %q or %q", DeductHold, DeductPayment))
	case t.Overbook != 0 && t.Deduct != DeductPayment:
		errs = append(errs, fmt.Errorf("overbook applies to deduct %q only", DeductPayment))
	case t.Overbook < 0 || t.Overbook > MaxOverbook:
		errs = append(errs, fmt.Errorf("overbook must be 1-%d (bookings per unit)", MaxOverbook))
	}
	if len(errs) == 0 {
		return nil
	}
	return &Error{Code: InvalidTerms, Message: errors.Join(errs...).Error()}
}

// Duration is a time.Duration written in JSON as Go writes durations
// ("15m", "25h"), the form the CLI's flags take too.
type Duration time.Duration

// D is the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String is time.Duration's without zero units at its end: "25h", "1m",
// "1h30m".
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return Errorf(Invalid, "a duration is a string such as \"15m\" or \"25h\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return Errorf(Invalid, "a duration is a string such as \"15m\" or \"25h\"")
	}
	*d = Duration(v)
	return nil
}

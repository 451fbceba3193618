package flashsale_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flashsale/flashsale"
)

func order(id string, items ...flashsale.Item) flashsale.Order {
	return flashsale.Order{OrderID: id, UserID: "u1", Items: items}
}

func TestOrderValidate(t *testing.T) {
	one := flashsale.Item{SKU: "1001", Quantity: 1}
	offer := flashsale.Order{OrderID: flashsale.WaitlistOrderID("A-1"), UserID: "u1", Items: []flashsale.Item{one}, FromOrder: "A-1"}
	long := strings.Repeat("x", flashsale.MaxIDLength)
	cases := []struct {
		name  string
		order flashsale.Order
		want  string // "" when valid, else a part of the message
	}{
		{"valid", order("A-1", one), ""},
		{"longest id", order(long, one), ""},
		{"id too long", order(long+"x", one), "order_id must be 1-64"},
		{"id with a space", order("A 1", one), "order_id must be"},
		{"dot segment", order("..", one), "order_id must be"},
		{"buyer takes the reserved prefix", order("wl-A-1", one), "reserved for waitlist offers"},
		{"waitlist offer", offer, ""},
		{"offer under another id", flashsale.Order{OrderID: "wl-B", UserID: "u1", Items: []flashsale.Item{one}, FromOrder: "A-1"}, "must be " + flashsale.WaitlistOrderID("A-1")},
		{"no items", order("A-1"), "1-20 items"},
		{"zero quantity", order("A-1", flashsale.Item{SKU: "1001"}), `quantity of "1001" must be 1-1000`},
		{"too many units", order("A-1", flashsale.Item{SKU: "1001", Quantity: 1001}), "must be 1-1000"},
		{"same sku twice", order("A-1", one, one), "appears twice"},
		{"bad sku", order("A-1", flashsale.Item{SKU: "a{b}", Quantity: 1}), "sku_id must be"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.order.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want a message containing %q", err, tc.want)
			}
			if got := flashsale.ErrorCode(err); got != flashsale.Invalid {
				t.Fatalf("code %s, want %s", got, flashsale.Invalid)
			}
		})
	}
}

func TestOrderValidateReportsEveryProblem(t *testing.T) {
	err := flashsale.Order{Items: []flashsale.Item{{SKU: "", Quantity: 0}}}.Validate()
	for _, part := range []string{"order_id", "user_id", "sku_id", "quantity"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("%q missing from %q", part, err)
		}
	}
}

func TestWaitlistOrderIDStaysWithinTheLimit(t *testing.T) {
	id := flashsale.WaitlistOrderID(strings.Repeat("y", flashsale.MaxIDLength))
	if len(id) > flashsale.MaxIDLength || !strings.HasPrefix(id, flashsale.WaitlistOrderPrefix) {
		t.Fatalf("offer id %q", id)
	}
	if id != flashsale.WaitlistOrderID(strings.Repeat("y", flashsale.MaxIDLength)) {
		t.Fatal("offer id not deterministic")
	}
}

func TestSKUValidate(t *testing.T) {
	ok := flashsale.SKU{ID: "1001", Total: 100, Price: 129900, Buckets: flashsale.DefaultBuckets, PerUserLimit: 1}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := ok
	bad.Buckets, bad.Total, bad.PerUserLimit = flashsale.MaxBuckets+1, -1, 0
	err := bad.Validate()
	for _, part := range []string{"buckets must be 1-1024", "total must be", "per_user_limit must be"} {
		if err == nil || !strings.Contains(err.Error(), part) {
			t.Errorf("%q missing from %v", part, err)
		}
	}
}

func TestErrorCodeAndMessage(t *testing.T) {
	soldOut := fmt.Errorf("reserve 1001: %w", flashsale.Errorf(flashsale.SoldOut, "sku %s is sold out", "1001"))
	cases := []struct {
		err  error
		code flashsale.Code
		msg  string
	}{
		{nil, "", "internal error"},
		{soldOut, flashsale.SoldOut, "sku 1001 is sold out"},
		{errors.New("dial tcp 10.0.0.1:3306: refused"), flashsale.Internal, "internal error"},
		{&flashsale.Error{Code: flashsale.Busy}, flashsale.Busy, "internal error"},
	}
	for _, tc := range cases {
		if got := flashsale.ErrorCode(tc.err); got != tc.code {
			t.Errorf("ErrorCode(%v) = %q, want %q", tc.err, got, tc.code)
		}
		if got := flashsale.ErrorMessage(tc.err); got != tc.msg {
			t.Errorf("ErrorMessage(%v) = %q, want %q", tc.err, got, tc.msg)
		}
	}
	if !errors.Is(soldOut, &flashsale.Error{Code: flashsale.SoldOut}) {
		t.Error("errors.Is does not match by code")
	}
	if errors.Is(soldOut, &flashsale.Error{Code: flashsale.UnknownSKU}) {
		t.Error("errors.Is matched another code")
	}
}

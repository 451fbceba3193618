package flashsale_test

import (
	"strings"
	"testing"

	"github.com/flashsale/flashsale"
)

func TestBuyerOrderID(t *testing.T) {
	a := flashsale.BuyerOrderID("alice", "cart-1")
	if a != flashsale.BuyerOrderID("alice", "cart-1") {
		t.Fatal("a retry with the same key must reach the same order")
	}
	if a == flashsale.BuyerOrderID("bob", "cart-1") {
		t.Fatal("another buyer's equal key must be another order")
	}
	if flashsale.BuyerOrderID("a", "bc") == flashsale.BuyerOrderID("ab", "c") {
		t.Fatal("buyer and key must not run into each other")
	}
	long := strings.Repeat("x", flashsale.MaxIDLength)
	for _, id := range []string{a, flashsale.BuyerOrderID(long, long)} {
		if len(id) != 42 || !strings.HasPrefix(id, flashsale.BuyerOrderPrefix) || !flashsale.ValidID(id, flashsale.MaxIDLength) {
			t.Fatalf("%q: want %s and 40 hex digits, a valid id", id, flashsale.BuyerOrderPrefix)
		}
		o := flashsale.Order{OrderID: id, UserID: "alice", Items: []flashsale.Item{{SKU: "s", Quantity: 1}}}
		if err := o.Validate(); err != nil {
			t.Fatalf("%q: %v", id, err)
		}
		if offer := flashsale.WaitlistOrderID(id); !flashsale.ValidID(offer, flashsale.MaxIDLength) {
			t.Fatalf("offer id %q of %q is not a valid id", offer, id)
		}
	}
}

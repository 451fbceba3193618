package flashsale_test

import (
	"crypto/sha256"
	"encoding/hex"
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

// AppendBuyerOrderID is BuyerOrderID's digest as first written, and with
// room in dst allocates nothing.
func TestAppendBuyerOrderID(t *testing.T) {
	for _, c := range [][2]string{{"u1", "k1"}, {"", ""}, {strings.Repeat("b", flashsale.MaxIDLength), strings.Repeat("k", flashsale.MaxIDLength)}} {
		sum := sha256.Sum256([]byte("flashsale buyer order id v1\x00" + c[0] + "\x00" + c[1]))
		want := flashsale.BuyerOrderPrefix + hex.EncodeToString(sum[:20])
		if got := flashsale.BuyerOrderID(c[0], c[1]); got != want {
			t.Fatalf("flashsale.BuyerOrderID(%q, %q) = %s, want %s", c[0], c[1], got, want)
		}
	}
	var dst [flashsale.BuyerOrderIDLength]byte
	if n := testing.AllocsPerRun(100, func() { flashsale.AppendBuyerOrderID(dst[:0], "buyer-1", "cart-42") }); n != 0 {
		t.Fatalf("AppendBuyerOrderID allocates %v times", n)
	}
}

package httpapi

import (
	"strings"
	"testing"
	"time"

	"github.com/flashsale/flashsale/internal/identity"
)

// scanQuickBuy takes only bodies the strict decode takes, and reads the
// same SKU, key and user from them.
func TestScanQuickBuyAgreesWithDecodeOrder(t *testing.T) {
	takes := []string{
		`{"items":[{"sku_id":"s1","quantity":1}]}`,
		` { "client_order_id" : "k-1" , "user_id":"u1", "items" : [ { "quantity" : 1000 , "sku_id" : "s.1" } ] } `,
		`{"items":[{"sku_id":"s1","quantity":3}],"client_order_id":"cart-42-try-1"}`,
	}
	refuses := []string{
		`{"items":[{"sku_id":"s1","quantity":1},{"sku_id":"s2","quantity":1}]}`,
		`{"items":[{"sku_id":"s1","quantity":1}],"extra":1}`,
		`{"items":[{"sku_id":"s1","quantity":0}]}`,
		`{"items":[{"sku_id":"s1","quantity":1001}]}`,
		`{"items":[{"sku_id":"s1","quantity":1.0}]}`,
		`{"items":[{"sku_id":"s1","quantity":01}]}`,
		`{"items":[{"sku_id":"s1","quantity":1}],"client_order_id":""}`,
		`{"items":[{"sku_id":"s1","quantity":1}],"client_order_id":"wl-x"}`,
		// The earlier contract's name for the key: the full path refuses it.
		`{"items":[{"sku_id":"s1","quantity":1}],"order_id":"k-1"}`,
		`{"items":[{"sku_id":"s\u0031","quantity":1}]}`,
		`{"items":[{"sku_id":"s1","quantity":1}],"client_order_id":null}`,
		`{"items":[{"sku_id":"s1","quantity":1}]}x`,
		`{"items":[{"sku_id":"s1","quantity":1}],"items":[{"sku_id":"s1","quantity":1}]}`,
		`{"items":[{"sku_id":"s 1","quantity":1}]}`,
		`{}`, `[]`, ``,
	}
	for _, b := range takes {
		q, ok := scanQuickBuy([]byte(b))
		if !ok {
			t.Fatalf("scan refused %s", b)
		}
		o, key, err := decodeOrder([]byte(b))
		if err != nil {
			t.Fatalf("decode refused %s: %v", b, err)
		}
		if q.sku != o.Items[0].SKU || q.key != key || q.user != o.UserID {
			t.Fatalf("%s: scan read %+v, decode %+v", b, q, o)
		}
	}
	for _, b := range refuses {
		if q, ok := scanQuickBuy([]byte(b)); ok {
			t.Fatalf("scan took %s as %+v", b, q)
		}
	}
}

func TestClaimedSubject(t *testing.T) {
	tok, err := (&identity.Minter{Secret: []byte("test-secret-0123456789abcdef-0123456789")}).Token("buyer-7", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var buf [1024]byte
	if got := string(claimedSubject("Bearer "+tok, buf[:])); got != "buyer-7" {
		t.Fatalf("sub %q", got)
	}
	for _, h := range []string{"", "Bearer", "Basic abc", "Bearer a.b", "Bearer " + strings.Repeat("A", 3000) + ".x.y"} {
		if got := claimedSubject(h, buf[:]); got != nil {
			t.Fatalf("%q: sub %q", h, got)
		}
	}
}

// A SKU noted from a view of a pooled buffer stays what it was when the
// buffer is reused.
func TestRecentSKUsKeepTheirOwnCopy(t *testing.T) {
	var r recentSKUs
	buf := []byte("sku-1")
	r.note(view(buf), time.Now())
	copy(buf, "XXXXX")
	if got := r.list(time.Now()); len(got) != 1 || got[0] != "sku-1" {
		t.Fatalf("recent SKUs %q", got)
	}
}

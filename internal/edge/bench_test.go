//go:build integration

package edge

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/flashsale/flashsale"
)

// BenchmarkAdmitSoldOut is the path most requests of a sale take: the SKU
// is sold out and the in-process cache answers without the network.
func BenchmarkAdmitSoldOut(b *testing.B) {
	f := newFixture(b)
	f.preheat(0)
	g := f.gate(Options{})
	ctx := context.Background()
	// The first request reads Redis, finds nothing and fills the cache.
	if _, err := g.Admit(ctx, f.req(0, 1)); !errors.Is(err, &flashsale.Error{Code: flashsale.SoldOut}) {
		b.Fatalf("want sold out, got %v", err)
	}
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(n.Add(1))
			if _, err := g.Admit(ctx, Request{OrderID: "b" + strconv.Itoa(i), UserID: "u" + strconv.Itoa(i),
				Items: []flashsale.Item{{SKU: f.sku, Quantity: 1}}}); !errors.Is(err, &flashsale.Error{Code: flashsale.SoldOut}) {
				b.Errorf("want sold out, got %v", err)
				return
			}
		}
	})
	if s := g.Stats(); s.SoldOutLocal < int64(b.N) {
		b.Errorf("only %d of %d answered from the local cache", s.SoldOutLocal, b.N)
	}
}

//go:build scaleout

package scaleout

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/flashsale/flashsale/internal/testenv"
)

// TestSmoke is the short smoke of the cluster topology that scripts/test.sh
// (so CI) runs: one small sale through HAProxy on the real Temporal cluster
// (five processes on PostgreSQL) and the Redis Cluster, two workers and two
// APIs, then every order settled, the checker and `starter check` clean,
// and the buyers' answers matching MySQL, and the Temporal Web UI (node
// temporal-ui) serving its app and listing the sale's orders through its
// HTTP API with the status Temporal and MySQL hold. TestMain brings the topology up
// (cluster.sh up, building Temporal on first use); scripts/test.sh takes it
// down afterwards. Winners pay or cancel at once (no payment timeout to
// wait out), so a cancelled unit goes back on sale and is bought again:
// reserve, create, pay, cancel and release all cross the cluster.
func TestSmoke(t *testing.T) {
	ctx := context.Background()
	progress := func(format string, args ...any) {
		// On stderr as it happens: go test -v buffers nothing, but CI
		// readers want to see where a slow smoke is.
		fmt.Fprintf(os.Stderr, "smoke %s: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	const units, buyers = 8, 30
	sku := "smoke-" + testenv.UniqueID(t)
	createSKU(t, sku, units, 1999, 4, 1)
	progress("SKU %s: %d units in 4 buckets, %d buyers through HAProxy %s", sku, units, buyers, apiURL)

	c := newCrowd(apiURL, sku, units, buyers)
	c.PayShare, c.CancelShare = 0.75, 0.25
	c.Deadline = 3 * time.Minute
	start := time.Now()
	c.Run(ctx)
	progress("sale over after %s: reserved %d, paid %d, requests %d, answers %v",
		time.Since(start).Round(time.Millisecond), c.Reserved.Load(), c.Paid.Load(), c.Requests.Load(), c.Answers)

	rep, took := settle(t, ctx, sku, 2*time.Minute)
	progress("settled %s after the sale", took.Round(time.Second))
	st := rep.SKUs[0]
	for _, v := range rep.Violations {
		t.Errorf("violation: %s order=%s: %s", v.Kind, v.OrderID, v.Detail)
	}
	out, err := starter(ctx, "check", "--sku", sku)
	if err != nil {
		t.Errorf("starter check --sku %s: %v", sku, err)
	} else {
		progress("starter check: %s", firstLine(out))
	}
	db, err := dbOrders(ctx, sku)
	if err != nil {
		t.Fatalf("read orders: %v", err)
	}
	for _, m := range verifyClient(c, db) {
		t.Errorf("client/database mismatch: %s", m)
	}
	if st.Oversold() != 0 || st.Undersold() != 0 || st.Sold != units {
		t.Errorf("total %d sold %d available %d frozen %d: oversold %d, undersold %d",
			st.Total, st.Sold, st.Available, st.Frozen, st.Oversold(), st.Undersold())
	}
	if c.Reserved.Load() < units {
		t.Errorf("only %d reservations for %d units", c.Reserved.Load(), units)
	}
	progress("%d orders, %d sold, oversold %d, undersold %d", len(db), st.Sold, st.Oversold(), st.Undersold())

	// The Temporal Web UI of the topology shows the sale as MySQL holds it.
	if checkUISeesSale(t, ctx, sku, db) {
		progress("web UI %s shows the sale's %d orders with their status", uiURL, len(db))
	}
}

package audit

// The stock invariants of one SKU: MySQL's row against its orders and its
// journal, and Redis against MySQL.

import (
	"fmt"

	"github.com/flashsale/flashsale/activities/contract"
	"github.com/flashsale/flashsale/internal/orderdb"
)

// checkStock applies the database invariants of one SKU.
func (c *checker) checkStock(a orderdb.SKUAudit) {
	inv, sku := a.Inventory, a.Inventory.SKU
	for _, col := range []struct {
		name  string
		value int64
	}{{"total", inv.Total}, {"available", inv.Available}, {"frozen", inv.Frozen}, {"sold", inv.Sold}} {
		if col.value < 0 {
			c.add(Violation{SKU: sku, Kind: KindNegative, Expected: 0, Actual: col.value, Detail: col.name + " is negative"})
		}
	}
	if sum := inv.Available + inv.Frozen + inv.Sold; sum != inv.Total {
		c.add(Violation{SKU: sku, Kind: KindBalance, Expected: inv.Total, Actual: sum,
			Detail: fmt.Sprintf("available %d + frozen %d + sold %d != total %d", inv.Available, inv.Frozen, inv.Sold, inv.Total)})
	}
	if a.PendingUnits != inv.Frozen {
		c.add(Violation{SKU: sku, Kind: KindFrozen, Expected: a.PendingUnits, Actual: inv.Frozen,
			Detail: "frozen must equal the units of PENDING_PAYMENT orders"})
	}
	if a.PaidUnits != inv.Sold {
		c.add(Violation{SKU: sku, Kind: KindSold, Expected: a.PaidUnits, Actual: inv.Sold,
			Detail: "sold must equal the units of PAID orders since the last reset"})
	}

	j := a.Journal
	for _, col := range []struct {
		name           string
		sum, last, row int64
	}{
		{"available", j.Available, j.LastAvailable, inv.Available},
		{"frozen", j.Frozen, j.LastFrozen, inv.Frozen},
		{"sold", j.Sold, j.LastSold, inv.Sold},
	} {
		if col.sum != col.row {
			c.add(Violation{SKU: sku, Kind: KindJournalReplay, Expected: col.sum, Actual: col.row,
				Detail: fmt.Sprintf("%s: %d journal deltas sum to %d, row has %d", col.name, j.Entries, col.sum, col.row)})
		}
		if j.Entries > 0 && col.last != col.row {
			c.add(Violation{SKU: sku, Kind: KindJournalReplay, Expected: col.last, Actual: col.row,
				Detail: fmt.Sprintf("%s: newest journal entry ends at %d, row has %d", col.name, col.last, col.row)})
		}
	}
	if j.Breaks > 0 {
		c.add(Violation{SKU: sku, Kind: KindJournalChain, Expected: 0, Actual: j.Breaks,
			Detail: fmt.Sprintf("journal entries not following from the one before; first is id %d", j.FirstBreak)})
	}
	for _, o := range a.OrderJournals {
		c.add(Violation{SKU: sku, OrderID: o.OrderID, Kind: KindOrderJournal, Expected: o.Want, Actual: o.Types,
			Detail: fmt.Sprintf("%s order has journal entries [%s], want [%s]", o.Status, o.Types, o.Want)})
	}
}

// checkRedis compares Redis with MySQL the way the reconciler does.
func (c *checker) checkRedis(obs contract.StockObservation) {
	sku := obs.SKU
	switch {
	case obs.UnknownSKU:
		return // the row vanished since AuditSKU; the next check sees it
	case obs.Ended:
		return // the sale ended: its Redis keys are removed on purpose
	case obs.Missing:
		c.add(Violation{SKU: sku, Kind: KindRedisMissing, Expected: obs.DBAvailable, Actual: 0,
			Detail: "redis has no bucket count: buyers are answered UNKNOWN_SKU until it is restored"})
		return
	}
	if n := len(obs.NegativeBuckets); n > 0 {
		c.add(Violation{SKU: sku, Kind: KindRedisNegative, Expected: 0, Actual: n,
			Detail: fmt.Sprintf("buckets %v hold negative counts", obs.NegativeBuckets)})
	}
	if obs.Torn {
		// Units kept coming back while it was read: the drift may be off
		// by them either way, so it is not judged.
		c.report.Warnings = append(c.report.Warnings,
			fmt.Sprintf("%s: redis snapshot torn by a live sale (drift %d not judged)", sku, obs.Drift))
		return
	}
	if obs.Dead > 0 {
		// Not wrong now (those units are out of Redis on purpose), but
		// proof that Redis once offered units MySQL did not have: after
		// no Redis fault, that is a bug worth a look.
		c.report.Warnings = append(c.report.Warnings,
			fmt.Sprintf("%s: %d units held in redis by ended orders mysql refused (past drift)", sku, obs.Dead))
	}
	got := obs.RedisUnits + obs.InFlight
	detail := fmt.Sprintf("redis buckets %d + in flight %d (%d orders) vs db available %d",
		obs.RedisUnits, obs.InFlight, obs.InFlightOrders, obs.DBAvailable)
	switch {
	case obs.Drift < 0:
		c.add(Violation{SKU: sku, Kind: KindRedisOver, Expected: obs.DBAvailable, Actual: got,
			Detail: detail + fmt.Sprintf(": redis offers %d units mysql does not have", -obs.Drift)})
	case obs.Drift > 0:
		c.add(Violation{SKU: sku, Kind: KindRedisUnder, Expected: obs.DBAvailable, Actual: got,
			Detail: detail + fmt.Sprintf(": %d units on sale in mysql are missing from redis", obs.Drift)})
	}
}

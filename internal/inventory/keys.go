package inventory

import (
	"strconv"
	"strings"
)

// Key layout.
//
// Redis Cluster routes a key by the part between the first '{' and the next
// '}' (the hash tag). Two families of tags are used:
//
//   - {sku:<sku>}        SKU-level keys: bucket count, generation, sold-out
//     flag, drift counter, resize history and lock, waitlist and reconcile
//     fence. They share one slot so Reserve can read N, gen and the
//     history with a single MGET and soldout.lua / bump.lua can touch gen
//     and the flag atomically.
//     The live sale page's traffic counts live in this slot too, written
//     by internal/saletraffic (fs:{sku:<sku>}:traffic and
//     fs:{sku:<sku>}:traffic:<unix second>), never by a script here.
//   - {sku:<sku>:b<i>}   bucket i's stock plus every marker that records a
//     change to that stock (per-order takes, per-request restocks). A marker
//     and the stock it describes must be updated in the same script, so they
//     must live in the same slot; different buckets land in different slots,
//     which is the point of bucketing (the hot key is spread over shards).
//
// The SKU is embedded inside the hash tag, so it must not contain '{' or '}'
// (validateSKU enforces that); order and request ids come after the tag and
// may contain anything. Hash tags must never change: they decide which
// keys a script may touch together.

// bucketsKey holds the bucket count N of a SKU as a decimal string. Its
// absence means the SKU was never preheated (UnknownSKU).
func bucketsKey(sku string) string { return "fs:{sku:" + sku + "}:buckets" }

// genKey is the SKU's generation counter. Every stock increase (preheat,
// release, restock) bumps it after the units are back, so a sold-out
// decision made from an older generation can be recognised as stale.
func genKey(sku string) string { return "fs:{sku:" + sku + "}:gen" }

// soldOutKey is the short-lived sold-out flag. API instances read it to turn
// buyers away without probing every bucket; it is only a hint, Reserve never
// trusts it.
func soldOutKey(sku string) string { return "fs:{sku:" + sku + "}:soldout" }

// driftKey counts units that Redis handed out but MySQL refused, so a
// reconciliation job knows how far Redis and the database diverged.
func driftKey(sku string) string { return "fs:{sku:" + sku + "}:drift" }

// driftRecordKey remembers that an order's refusal was counted, so a
// retried activity does not count it twice.
func driftRecordKey(sku, orderID string) string { return driftKey(sku) + ":" + orderID }

// bucketTag is the hash tag shared by bucket i's stock and its markers.
func bucketTag(sku string, bucket int) string {
	return "fs:{sku:" + sku + ":b" + strconv.Itoa(bucket) + "}"
}

// stockKey holds bucket i's remaining units as an integer string.
func stockKey(sku string, bucket int) string { return bucketTag(sku, bucket) + ":stock" }

// orderKey is the marker of orderID's take from bucket i:
//
//	"<k>"  k units taken and held (k may be 0: probed, nothing was there)
//	"r<k>" k units taken and later given back by Release ("r0" is the
//	       tombstone Release leaves where nothing was held)
//	"s<k>" k units taken and given back by Reserve itself because the order
//	       could not be served in full (sold out)
//
// It makes take and release idempotent and lets a retried Reserve replay the
// first attempt's answer.
func orderKey(sku string, bucket int, orderID string) string {
	return bucketTag(sku, bucket) + ":order:" + orderID
}

// restockKey marks that restock requestID already added its units to bucket
// i, making Restock idempotent. It lives in the bucket's slot so restock.lua
// can check it and INCRBY the stock atomically.
func restockKey(sku string, bucket int, requestID string) string {
	return bucketTag(sku, bucket) + ":restock:" + requestID
}

// layoutsKey lists every bucket count the SKU has had since its first
// resize, comma separated ("16,64,4"); absent for a SKU never resized.
// It shares the SKU slot with the count, so layout.lua switches both in one
// step and Reserve reads them with one MGET.
func layoutsKey(sku string) string { return "fs:{sku:" + sku + "}:layouts" }

// epochKey is the SKU's layout epoch: it moves on every change of the
// bucket count or the resize history (Preheat, Resize, Restore), and a
// Store caches the layout together with it (layoutcache.go).
func epochKey(sku string) string { return "fs:{sku:" + sku + "}:layout:epoch" }

// stampKey is bucket i's copy of the layout epoch, written BEFORE the
// epoch itself moves, so take.lua can refuse a take made under a cached
// layout that is no longer current (layoutcache.go). Absent reads as 0.
func stampKey(sku string, bucket int) string { return bucketTag(sku, bucket) + ":layout" }

// resizeLockKey serializes Resize calls of one SKU.
func resizeLockKey(sku string) string { return "fs:{sku:" + sku + "}:resize:lock" }

// moveOutKey marks that move id took units out of bucket i ("<k>:<dest>").
func moveOutKey(sku string, bucket int, id string) string {
	return bucketTag(sku, bucket) + ":moveout:" + id
}

// moveInKey marks that move id put its units into bucket i.
func moveInKey(sku string, bucket int, id string) string {
	return bucketTag(sku, bucket) + ":movein:" + id
}

// pendingMovesKey is bucket i's hash of moves taken out of it and not yet
// known to have landed: move id -> "<k>:<dest>".
func pendingMovesKey(sku string, bucket int) string { return bucketTag(sku, bucket) + ":moves" }

// The waitlist lives in the SKU's slot, beside the bucket count and the
// sold-out flag, so the list, its membership set and the per-release offer
// records change together in one script (waitlist.go):
//
//	fs:{sku:<sku>}:waitlist               FIFO list of user ids
//	fs:{sku:<sku>}:waitlist:ranked        a fair sale's waiting buyers: zset user -> rank, served first
//	fs:{sku:<sku>}:waitlist:users         set of the ids of both (join is idempotent)
//	fs:{sku:<sku>}:offer:<released order> who got that order's units ("" = nobody)
//	fs:{sku:<sku>}:waitlist:offers        hash: user id -> released order offered to them
//
// The hand-over itself (Transfer) touches only bucket slots: both orders'
// markers of bucket i share bucket i's hash tag.
func waitlistKey(sku string) string       { return "fs:{sku:" + sku + "}:waitlist" }
func waitlistUsersKey(sku string) string  { return "fs:{sku:" + sku + "}:waitlist:users" }
func waitlistRankedKey(sku string) string { return "fs:{sku:" + sku + "}:waitlist:ranked" }
func waitlistOffersKey(sku string) string { return "fs:{sku:" + sku + "}:waitlist:offers" }
func offerKey(sku, releasedOrderID string) string {
	return "fs:{sku:" + sku + "}:offer:" + releasedOrderID
}

// saleKey is a fair sale's hash (internal/sale, keys.go), in the SKU's
// slot: the waitlist reads its state, and offers nothing while it is
// PAUSED.
func saleKey(sku string) string { return "fs:{sku:" + sku + "}:sale" }

// QueuedKey marks a SKU sold through a fair sale only ("1"), copied from
// MySQL by every preheat (SetQueued): internal/sale's buy check reads it
// beside the sale's state, and refuses a buy of the SKU while no sale of
// it exists (the window between its PUT and its sale's start).
func QueuedKey(sku string) string { return "fs:{sku:" + sku + "}:queued" }

// reconcileFenceKey counts corrections and restores of a SKU. Observations
// carry the value they read; a correction may only act on an observation
// whose fence is still current (claim.lua). It shares the SKU slot with the
// bucket count and gen so one MGET reads all three.
func reconcileFenceKey(sku string) string { return "fs:{sku:" + sku + "}:reconcile:fence" }

// reconcileClaimKey records that correctionID claimed the fence, so a
// retried correction activity recognises its own claim.
func reconcileClaimKey(sku, correctionID string) string {
	return "fs:{sku:" + sku + "}:reconcile:claim:" + correctionID
}

// adjustKey records what correctionID did to bucket i (adjust.lua), in the
// bucket's slot so the check and the move are one atomic step.
func adjustKey(sku string, bucket int, correctionID string) string {
	return bucketTag(sku, bucket) + ":adjust:" + correctionID
}

// orderKeyPrefix starts every bucket key of sku; HeldByOrder scans for
// prefix + "*}:order:*" (reconcile.go).
func orderKeyPrefix(sku string) string { return "fs:{sku:" + sku + ":b" }

// validateSKU rejects SKUs that would break the key layout: an empty one,
// or one containing a brace, which would end or confuse the hash tag and
// scatter one bucket's keys over several cluster slots.
func validateSKU(sku string) error {
	if sku == "" {
		return invalidf("empty sku")
	}
	if strings.ContainsAny(sku, "{}") {
		return invalidf("sku %q must not contain '{' or '}'", sku)
	}
	return nil
}

// The per-buyer limit lives in the SKU's slot, beside the bucket count and
// gen, so the edge reads it in the same MGET as the stock and one script
// checks and counts it atomically (limit.go):
//
//	fs:{sku:<sku>}:limit          "<per-buyer limit>:<sale>" (written by a PUT of the SKU)
//	fs:{sku:<sku>}:held:<user>    "<sale>:<units>" the buyer holds in that sale
//	fs:{sku:<sku>}:claim:<order>  "<h|r|s><units>:<sale>:<user>" what the order counted
//
// <sale> is the SKU's sale_started_at in Unix milliseconds, the start of the
// sale MySQL's limit check counts from: a count of another sale reads as 0.
// The claim makes counting idempotent per order as the bucket markers make
// taking idempotent ("h" held, "r" given back by Release, "s" given back by
// Reserve sold out). User ids may contain ':', so the user comes last.
func limitKey(sku string) string { return "fs:{sku:" + sku + "}:limit" }
func heldKey(sku, userID string) string {
	return "fs:{sku:" + sku + "}:held:" + userID
}
func claimKey(sku, orderID string) string { return "fs:{sku:" + sku + "}:claim:" + orderID }

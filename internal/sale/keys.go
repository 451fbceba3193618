package sale

// Every key of a SKU's sale lives in the SKU's slot ({sku:<sku>}, the hash
// tag of inventory's SKU-level keys), so each script below touches one
// slot and a Redis Cluster can run it:
//
//	fs:{sku:<sku>}:sale           hash: state, sale_id, opens_at, seed_hash,
//	                              pass_ttl_ms, entrants (at the freeze),
//	                              closes_at (ms, when the sale has an end),
//	                              open_as (PAUSED: a failing go/no-go),
//	                              seed (only once the ranks are written)
//	fs:{sku:<sku>}:sale:seed      the seed of a sale prepared before seeds
//	                              left Redis (now in MySQL until the open)
//	fs:{sku:<sku>}:sale:seq       the pre-queue's ticket counter
//	fs:{sku:<sku>}:sale:entered   hash: user -> ticket (entered before the freeze)
//	fs:{sku:<sku>}:sale:late      counter of the arrivals after the freeze
//	fs:{sku:<sku>}:sale:rank      zset: user -> rank (1 is first)
//	fs:{sku:<sku>}:sale:serving   the highest rank a pass was issued to
//	fs:{sku:<sku>}:sale:passes    zset: rank -> expiry (ms, Redis time), outstanding
//	fs:{sku:<sku>}:sale:spent     hash: rank -> the order that spent its pass
//	fs:{sku:<sku>}:sale:capacity  hash: API instance -> "<units>:<expiry ms>",
//	                              the placements it can take in flight
//	                              (sale_me.lua; an expired field is dead)
//
// The SKU is inside the hash tag, so it must not contain '{' or '}'; the
// flashsale id alphabet excludes both.

func saleKey(sku string) string { return "fs:{sku:" + sku + "}:sale" }

// keys lists a sale's keys in the order every script expects them.
func keys(sku string) []string {
	k := saleKey(sku)
	return []string{k, k + ":seed", k + ":seq", k + ":entered", k + ":late", k + ":rank", k + ":serving", k + ":passes", k + ":spent",
		k + ":capacity"}
}

// Positions in keys().
const (
	kSale = iota
	kSeed
	kSeq
	kEntered
	kLate
	kRank
	kServing
	kPasses
	kSpent
	kCapacity
)

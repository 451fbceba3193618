package edge

// placedKey marks an order id as placed; its value is the buyer's user id.
func placedKey(orderID string) string { return "fs:placed:" + orderID }

// placedSetKey is the set of the order ids placed for sku (each also has
// its placedKey), in the SKU's slot, expiring with the markers: the quick
// sold-out answer's snapshot of which requests may be repeats.
func placedSetKey(sku string) string { return "fs:{sku:" + sku + "}:placed" }

// rateKey is a user's budget for one kind of request (redis_rate prefixes
// "rate:"): buys and waitlist joins are counted apart, so queueing does not
// cost a buyer their next buy.
func rateKey(scope, userID string) string { return "fs:" + scope + ":" + userID }

// Rate-limit scopes.
const (
	scopeBuy = "buy"
	// ScopeWaitlist counts waitlist joins (see RateLimit).
	ScopeWaitlist = "waitlist"
)

// ScopeQueue counts a fair sale's queue entries and place reads (see
// RateLimit).
const ScopeQueue = "queue"

package flashsale

import (
	"crypto/sha256"
	"encoding/hex"
)

// BuyerOrderPrefix starts every order id derived from a buyer's own key
// (BuyerOrderID). No client id of the earlier scheme and no server-made id
// (a UUID) is expected under it, and a waitlist offer's id starts with
// WaitlistOrderPrefix instead.
const BuyerOrderPrefix = "b-"

// BuyerOrderID is the order id of the order a buyer placed with their own
// idempotency key clientKey (the buy request's order_id).
//
// The key is the buyer's, not the system's: the id carries the buyer, so
// two buyers' equal keys are two orders, nobody can take a buyer's
// predictable key ("cart-42-try-1") in advance, and an id says nothing to
// anyone but the buyer who holds it. It is deterministic, so a retry with
// the same key reaches the same order. A digest of fixed length keeps it
// within MaxIDLength and the id alphabet whatever the buyer and key, and
// leaves room for WaitlistOrderID's prefix.
func BuyerOrderID(buyer, clientKey string) string {
	// Both are ids (no NUL byte), so the separator makes the pair
	// unambiguous; the label keeps these digests apart from any other.
	sum := sha256.Sum256([]byte("flashsale buyer order id v1\x00" + buyer + "\x00" + clientKey))
	return BuyerOrderPrefix + hex.EncodeToString(sum[:20])
}

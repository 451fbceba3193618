package flashsale

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"strings"
)

// BuyerOrderPrefix starts every order id derived from a buyer's own key
// (BuyerOrderID). No server-made id (a UUID) starts with it, and a waitlist
// offer's id starts with WaitlistOrderPrefix instead.
const BuyerOrderPrefix = "b-"

// BuyerOrderID is the order id of the order a buyer placed with their own
// idempotency key clientKey (the buy request's client_order_id).
//
// The key is the buyer's, not the system's: the id carries the buyer, so
// two buyers' equal keys are two orders, nobody can take a buyer's
// predictable key ("cart-42-try-1") in advance, and an id says nothing to
// anyone but the buyer who holds it. It is deterministic, so a retry with
// the same key reaches the same order. A digest of fixed length keeps it
// within MaxIDLength and the id alphabet whatever the buyer and key, and
// leaves room for WaitlistOrderID's prefix.
func BuyerOrderID(buyer, clientKey string) string {
	var id [BuyerOrderIDLength]byte
	return string(AppendBuyerOrderID(id[:0], buyer, clientKey))
}

// BuyerOrderIDLength is the length of every BuyerOrderID.
const BuyerOrderIDLength = len(BuyerOrderPrefix) + 40

// buyerOrderLabel keeps these digests apart from any other.
const buyerOrderLabel = "flashsale buyer order id v1\x00"

// AppendBuyerOrderID appends BuyerOrderID(buyer, clientKey) to dst. With
// room in dst and ids of at most MaxIDLength it allocates nothing (the
// edge's sold-out answer computes it per request).
func AppendBuyerOrderID(dst []byte, buyer, clientKey string) []byte {
	// Both are ids (no NUL byte), so the separator makes the pair
	// unambiguous.
	var buf [len(buyerOrderLabel) + 2*MaxIDLength + 1]byte
	in := append(append(append(append(buf[:0], buyerOrderLabel...), buyer...), 0), clientKey...)
	sum := sha256.Sum256(in)
	dst = append(dst, BuyerOrderPrefix...)
	return hex.AppendEncode(dst, sum[:20])
}

// CheckClientOrderID is the check of a buyer's idempotency key, at every
// door that takes one (the buy request's client_order_id, `starter order
// --client-order-id`): an id, outside the prefix of waitlist offers' ids,
// which an order named by a key never takes but which a key that looks
// like one would confuse in the logs.
func CheckClientOrderID(key string) error {
	if err := CheckID("client_order_id", key, MaxIDLength); err != nil {
		return err
	}
	if strings.HasPrefix(key, WaitlistOrderPrefix) {
		return Errorf(Invalid, "client_order_id must not start with %s, reserved for waitlist offers", WaitlistOrderPrefix)
	}
	return nil
}

// UserIDDigest is the keyed hash (HMAC-SHA256 with key, the
// USER_ID_HMAC_KEY secret) under which a buyer's id is kept in Temporal's
// visibility (the UserId search attribute), so the store an operator
// browses holds no raw user id. Only whoever holds the key can compute
// it from a user id (`starter orders --user`); nobody can reverse it.
func UserIDDigest(key []byte, userID string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(userID))
	return "u-" + hex.EncodeToString(mac.Sum(nil)[:20])
}

// BuyerLogKey names a buyer in every log line of the worker and the API,
// always by their UserIDDigest, never by the raw id: logs are shipped and
// kept more widely than the order store, and the digest is what Temporal's
// visibility and `starter orders --user` already find a buyer by. A line
// that holds only the digest (a workflow, which never holds the key) uses
// the key with it; every other uses BuyerLogAttr.
const BuyerLogKey = "user"

// BuyerLogAttr is the log attribute naming userID: BuyerLogKey with the
// digest under key (the USER_ID_HMAC_KEY). The digest is computed only when
// a handler writes the line, so a DEBUG attribute costs nothing while DEBUG
// is off.
func BuyerLogAttr(key []byte, userID string) slog.Attr {
	return slog.Any(BuyerLogKey, buyerDigest{key: key, userID: userID})
}

type buyerDigest struct {
	key    []byte
	userID string
}

func (b buyerDigest) LogValue() slog.Value { return slog.StringValue(UserIDDigest(b.key, b.userID)) }

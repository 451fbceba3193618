package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/catalog"
)

// Run a target with e.g.
//
//	go test -run '^$' -fuzz '^FuzzDecodeOrder$' -fuzztime 1m ./internal/httpapi
//
// Without -fuzz the seeds below run as ordinary tests.

// mustRefuse checks that a decoding failure is a 400 the client may see.
func mustRefuse(t *testing.T, err error) {
	t.Helper()
	a, body := answerFor(err)
	if a.status != http.StatusBadRequest || body.Code != flashsale.Invalid || body.Message == "" || body.Message == a.message {
		t.Fatalf("refusal is not a 400 INVALID_REQUEST in words of its own: %#v", err)
	}
}

func FuzzDecodeOrder(f *testing.F) {
	for _, seed := range []string{
		`{"client_order_id":"o-1","user_id":"u1","items":[{"sku_id":"1001","quantity":1}]}`,
		`{"order_id":"o-1","user_id":"u1","items":[{"sku_id":"1001","quantity":1}]}`,
		`{"user_id":"u1","items":[{"sku_id":"1001","quantity":2},{"sku_id":"1002","quantity":1}]}`,
		`{"client_order_id":null,"user_id":"u1","items":[{"sku_id":"1001","quantity":1}]}`,
		`{"user_id":"u1","items":[{"sku_id":"1001","quantity":1}],"extra":1}`,
		`{"user_id":"u1","items":[{"sku_id":"1001","quantity":-1}]}`,
		`{"user_id":"u1","items":[{"sku_id":"a}b","quantity":1}]}`,
		`{"user_id":"u 1","items":[{"sku_id":"1001","quantity":1e2}]}`,
		`{"user_id":"\u00e9","items":[{"sku_id":"1001","quantity":1}]} trailing`,
		`[]`, `null`, ``, `{"items":{}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, key, err := decodeOrder(body)
		if err != nil {
			mustRefuse(t, err)
			return
		}
		// Whatever is accepted is safe for every layer below.
		if in.OrderID != "" {
			t.Fatalf("the client chose the order's id %q", in.OrderID)
		}
		if key != "" && !flashsale.ValidID(key, flashsale.MaxIDLength) {
			t.Fatalf("accepted key %q", key)
		}
		if !flashsale.ValidID(in.UserID, flashsale.MaxIDLength) {
			t.Fatalf("accepted user id %q", in.UserID)
		}
		for _, it := range in.Items {
			if !flashsale.ValidID(it.SKU, flashsale.MaxIDLength) || it.Quantity < 1 || it.Quantity > flashsale.MaxItemQuantity {
				t.Fatalf("accepted item %+v", it)
			}
		}
		check := in
		check.OrderID = flashsale.BuyerOrderID(in.UserID, key)
		if err := check.Validate(); err != nil {
			t.Fatalf("accepted an order the workflow refuses: %v", err)
		}
		// Re-encoding what was accepted decodes to the same order and key.
		req := orderRequest{UserID: in.UserID}
		if key != "" {
			req.ClientOrderID = &key
		}
		for _, it := range in.Items {
			req.Items = append(req.Items, itemRequest{SKU: it.SKU, Quantity: it.Quantity})
		}
		again, againKey, err := decodeOrder(mustMarshal(t, req))
		if err != nil || !equalOrders(in, again) || againKey != key {
			t.Fatalf("round trip: %+v %q -> %+v %q, %v", in, key, again, againKey, err)
		}
	})
}

func equalOrders(a, b flashsale.Order) bool {
	if a.OrderID != b.OrderID || a.UserID != b.UserID || len(a.Items) != len(b.Items) {
		return false
	}
	for i := range a.Items {
		if a.Items[i] != b.Items[i] {
			return false
		}
	}
	return true
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzDecodeAdminAndCallback covers the other bodies: the payment
// callback, the SKU definition and the restock.
func FuzzDecodeAdminAndCallback(f *testing.F) {
	for _, seed := range []string{
		`{"order_id":"o1","transaction_id":"t1","amount":4999,"payment_status":"SUCCESS"}`,
		`{"order_id":"o1","transaction_id":"t1","amount":4999,"payment_status":"FAILED"}`,
		`{"order_id":"o1","transaction_id":"t1","amount":0,"payment_status":"SUCCESS"}`,
		`{"total":100,"price":4999,"buckets":16,"per_user_limit":1}`,
		`{"total":100,"price":4999}`,
		`{"quantity":5,"restock_id":"r-1"}`,
		`{"quantity":5,"restock_id":"r-1","x":1}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if cb, err := decodeCallback(body); err != nil {
			mustRefuse(t, err)
		} else if !flashsale.ValidID(cb.OrderID, flashsale.MaxIDLength) || !flashsale.ValidID(cb.TransactionID, flashsale.MaxTransactionIDLength) ||
			cb.Amount <= 0 || (cb.Status != CallbackSuccess && cb.Status != CallbackFailed) {
			t.Fatalf("accepted callback %+v", cb)
		}
		// The door decodes; the use case checks (Define validates the SKU,
		// Restock its input): together they refuse as before.
		sku, err := decodeSKU(body)
		if err == nil {
			sku.ID = "s"
			err = sku.Validate()
		}
		if err != nil {
			mustRefuse(t, err)
		} else if sku.Total < 0 || sku.Total > flashsale.MaxSKUTotal || sku.Price < 0 || sku.Price > flashsale.MaxPrice ||
			sku.Buckets < 1 || sku.Buckets > 1024 || sku.PerUserLimit < 1 || sku.PerUserLimit > flashsale.MaxPerUserLimit {
			t.Fatalf("accepted sku %+v", sku)
		}
		rs, err := decodeRestock(body)
		if err == nil {
			err = catalog.CheckRestock("s", rs.RestockID, rs.Quantity)
		}
		if err != nil {
			mustRefuse(t, err)
		} else if rs.Quantity < 1 || rs.Quantity > flashsale.MaxSKUTotal || !flashsale.ValidID(rs.RestockID, flashsale.MaxIDLength) {
			t.Fatalf("accepted restock %+v", rs)
		}
	})
}

const fuzzSecret = "whsec-fuzz-0123456789abcdef"

func FuzzVerifySignature(f *testing.F) {
	at := time.Unix(1_800_000_000, 0)
	body := []byte(`{"order_id":"o1","transaction_id":"t1","amount":1,"payment_status":"SUCCESS"}`)
	good := Sign(fuzzSecret, at, body)
	for _, h := range []string{
		good,
		good + ",v1=" + strings.Repeat("0", 64),
		"v1=" + strings.Repeat("0", 64) + "," + good,
		"t=1800000000",
		"t=01800000000,v1=" + strings.Repeat("a", 64),
		"t=-5,v1=" + strings.Repeat("a", 64),
		"t=99999999999999999999,v1=",
		"t=1800000000,t=1800000000,v1=" + strings.Repeat("a", 64),
		",,,,", "=", "t==", "v0=abc,t=1800000000",
	} {
		f.Add(h, body, int64(0))
	}
	f.Add(good, []byte("tampered"), int64(0))
	f.Add(good, body, int64(301))
	f.Add(good, body, int64(-301))

	f.Fuzz(func(t *testing.T, header string, body []byte, skew int64) {
		skew %= 1_000_000
		now := at.Add(time.Duration(skew) * time.Second)
		secrets := []string{"whsec-other-0123456789abcdef", fuzzSecret}

		// Arbitrary input: never panics; accepted only with a real MAC.
		if err := VerifySignature(header, body, secrets, now); err == nil {
			ts, ok := strings.CutPrefix(timestampOf(header), "t=")
			if !ok {
				t.Fatalf("accepted %q without a timestamp", header)
			}
			matched := false
			for _, s := range secrets {
				if strings.Contains(header, "v1="+hexOf(mac(s, ts, body))) {
					matched = true
				}
			}
			if !matched {
				t.Fatalf("accepted %q for body %q without its MAC", header, body)
			}
		} else if !errors.Is(err, errBadSignature) {
			t.Fatalf("refusal is not errBadSignature: %v", err)
		}

		// A fresh signature of this body verifies, within the tolerance.
		sig := Sign(fuzzSecret, now, body)
		if err := VerifySignature(sig, body, secrets, now); err != nil {
			t.Fatalf("own signature refused: %v", err)
		}
		if err := VerifySignature(sig, body, secrets, now.Add(SignatureTolerance+time.Second)); err == nil {
			t.Fatal("stale signature accepted")
		}
		// Any other body does not.
		other := append(bytes.Clone(body), 'x')
		if err := VerifySignature(sig, other, secrets, now); err == nil {
			t.Fatal("signature accepted for a different body")
		}
		// Nor does another secret alone.
		if err := VerifySignature(sig, body, secrets[:1], now); err == nil {
			t.Fatal("signature accepted under another secret")
		}
	})
}

// timestampOf returns the "t=..." part of a header.
func timestampOf(header string) string {
	for part := range strings.SplitSeq(header, ",") {
		if p := strings.TrimSpace(part); strings.HasPrefix(p, "t=") {
			return p
		}
	}
	return ""
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

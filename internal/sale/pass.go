package sale

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/flashsale/flashsale"
)

// PassHeader carries a pass on POST /api/v1/orders.
const PassHeader = "Sale-Pass"

// Pass is what a pass says: one unit of SKU for the buyer of Rank, to be
// spent before Expiry (Redis's clock decides that, in Spend).
type Pass struct {
	// SaleID is the sale the pass is of (its workflow run): a pass of the
	// SKU's previous sale is another's (PassForeign at the spend).
	SaleID string
	SKU    string
	UserID string
	Rank   int64
	Expiry time.Time
}

// passClaims is a pass's signed payload.
type passClaims struct {
	SaleID string `json:"i"`
	SKU    string `json:"s"`
	UserID string `json:"u"`
	Rank   int64  `json:"r"`
	Expiry int64  `json:"e"`
}

// Signer signs and verifies passes. Every API instance must hold the same
// key; nothing else does.
type Signer struct{ key []byte }

// NewSigner derives the pass key from secret (the API's admin token: every
// instance shares it), so passes need no setting of their own.
func NewSigner(secret string) *Signer {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("flashsale sale pass v1"))
	return &Signer{key: m.Sum(nil)}
}

var b64 = base64.RawURLEncoding

// Sign returns the pass as a token: base64url(payload) "." base64url(HMAC).
func (s *Signer) Sign(p Pass) string {
	payload, _ := json.Marshal(passClaims{SaleID: p.SaleID, SKU: p.SKU, UserID: p.UserID, Rank: p.Rank, Expiry: p.Expiry.UnixMilli()}) // plain fields: never fails
	body := b64.EncodeToString(payload)
	return body + "." + b64.EncodeToString(s.mac(body))
}

func (s *Signer) mac(body string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(body))
	return m.Sum(nil)
}

// Verify reads a token this signer made for buyer's buy of sku:
// PassRequired when it is missing, unreadable or not ours, PassForeign when
// it is another buyer's or another SKU's. Expiry and single use are
// Spend's, against Redis.
func (s *Signer) Verify(token, buyer, sku string) (Pass, error) {
	required := flashsale.Errorf(flashsale.PassRequired, "a buy of %s needs a valid pass from its queue (GET /api/v1/skus/%s/queue/me)", sku, sku)
	body, sig, ok := strings.Cut(token, ".")
	if !ok || len(token) > 1024 {
		return Pass{}, required
	}
	got, err := b64.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(body)) {
		return Pass{}, required
	}
	raw, err := b64.DecodeString(body)
	var c passClaims
	if err != nil || json.Unmarshal(raw, &c) != nil || c.Rank <= 0 || c.SaleID == "" {
		return Pass{}, required
	}
	if c.UserID != buyer || c.SKU != sku {
		return Pass{}, flashsale.Errorf(flashsale.PassForeign, "this pass is not yours for %s", sku)
	}
	return Pass{SaleID: c.SaleID, SKU: c.SKU, UserID: c.UserID, Rank: c.Rank, Expiry: time.UnixMilli(c.Expiry)}, nil
}

//go:build faults

package faults

import (
	"net/http"
	"time"

	"github.com/flashsale/flashsale/internal/identity"
	"github.com/flashsale/flashsale/lab/crowd"
)

// buyerAuth is user's Authorization header, minted with the suite's
// BUYER_JWT_SECRET as the shop's login service would.
func buyerAuth(user string) http.Header {
	tok, err := (&identity.Minter{Secret: []byte(buyerSecret)}).Token(user, time.Hour)
	if err != nil {
		panic(err) // only an unusable secret fails, and the suite's is fixed
	}
	return http.Header{"Authorization": {"Bearer " + tok}}
}

// newCrowd is the suite's crowd of buyers on the API at base.
func newCrowd(base, sku string, units int64, buyers int) *crowd.Crowd {
	return crowd.New(base, sku, units, buyers, webhookSecret, buyerAuth)
}

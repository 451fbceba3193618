//go:build scaleout

package scaleout

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/flashsale/flashsale/internal/identity"
	"github.com/flashsale/flashsale/lab/crowd"
)

// tokens caches buyers' tokens; mintToken makes one when a user has none
// (the case can swap it for `starter token`, as a newcomer would).
var (
	tokensMu  sync.Mutex
	tokens    = map[string]string{}
	mintToken = func(user string) (string, error) {
		return (&identity.Minter{Secret: []byte(buyerSecret)}).Token(user, time.Hour)
	}
)

// buyerAuth is user's Authorization header, minted with the cluster's
// BUYER_JWT_SECRET as the shop's login service would.
func buyerAuth(user string) http.Header {
	tokensMu.Lock()
	defer tokensMu.Unlock()
	tok, ok := tokens[user]
	if !ok {
		var err error
		if tok, err = mintToken(user); err != nil {
			panic(fmt.Sprintf("mint token for %s: %v", user, err))
		}
		tokens[user] = tok
	}
	return http.Header{"Authorization": {"Bearer " + tok}}
}

// newCrowd is the suite's crowd of buyers on the API at base (the fault
// suite's crowd: lab/crowd).
func newCrowd(base, sku string, units int64, buyers int) *crowd.Crowd {
	return crowd.New(base, sku, units, buyers, webhookSecret, buyerAuth)
}

package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/identity"
)

// caller is who sent a buyer request: a buyer, named by their token's
// subject, or an operator holding the admin token (allowed where an
// endpoint says so: reading and cancelling any order).
type caller struct {
	buyer string
	admin bool
}

// authenticate reads the bearer token. With allowAdmin, the admin token
// is accepted too. A missing or bad token is 401 UNAUTHENTICATED; the
// reason goes to the log only.
func (s *Server) authenticate(r *http.Request, allowAdmin bool) (caller, error) {
	token := identity.BearerToken(r.Header.Get("Authorization"))
	if allowAdmin && s.isAdmin(token) {
		return caller{admin: true}, nil
	}
	buyer, err := s.deps.Buyers.Buyer(token)
	if err != nil {
		s.log.DebugContext(r.Context(), "buyer token refused", "path", r.URL.Path, "error", err)
		return caller{}, errUnauthenticated("missing, expired or invalid buyer token")
	}
	// The subject becomes Redis keys, MySQL rows and workflow search
	// attributes: it must obey the same alphabet as a body's user_id did.
	if !flashsale.ValidID(buyer, flashsale.MaxIDLength) {
		return caller{}, errUnauthenticated("the token's subject is not a usable buyer id")
	}
	noteBuyer(r, buyer)
	return caller{buyer: buyer}, nil
}

// claimedUser checks a body's optional user_id against the caller: it may
// only repeat the token's subject.
func (c caller) claimedUser(bodyUserID string) error {
	if bodyUserID != "" && bodyUserID != c.buyer {
		return &flashsale.Error{Code: UserMismatch}
	}
	return nil
}

func errUnauthenticated(msg string) error {
	return refuse(flashsale.Unauthenticated, msg)
}

// isAdmin reports whether token is the operators' bearer token.
func (s *Server) isAdmin(token string) bool {
	// Comparing hashes keeps the time independent of the token's length
	// as well as its content.
	got := sha256.Sum256([]byte(token))
	return token != "" && subtle.ConstantTimeCompare(got[:], s.adminHash[:]) == 1
}

// admin guards operator endpoints with the bearer token.
func (s *Server) admin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.isAdmin(identity.BearerToken(r.Header.Get("Authorization"))) {
			s.writeError(w, r, &flashsale.Error{Code: Unauthorized})
			return
		}
		h(w, r)
	}
}

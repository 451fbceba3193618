package identity

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// jwksKeyfunc is keyfunc's default JWKS client (fetch at start, refresh
// hourly and, at most every five minutes, on an unknown kid), built by hand
// for one reason: the keys land in a watchedKeys, which calls changed when
// a refresh takes away or alters a key the cache may have trusted.
func jwksKeyfunc(ctx context.Context, cfg Config, changed func()) (jwt.Keyfunc, error) {
	every, unknownKID := time.Hour, 5*time.Minute
	if cfg.jwksRefresh > 0 {
		every = cfg.jwksRefresh
	}
	if cfg.jwksUnknownKID > 0 {
		unknownKID = cfg.jwksUnknownKID
	}
	u := cfg.JWKSURL
	store, err := jwkset.NewStorageFromHTTP(u, jwkset.HTTPClientStorageOptions{
		Ctx: ctx,
		// The API may start while the IdP is briefly away; the refresh
		// below and the next unknown kid try again.
		NoErrorReturnFirstHTTPReq: true,
		RefreshErrorHandler: func(rctx context.Context, err error) {
			if ctx.Err() != nil {
				return // shutting down, not the IdP's fault
			}
			slog.Default().ErrorContext(rctx, "refresh buyer jwks", "url", u, "error", err)
		},
		RefreshInterval: every,
		Storage:         &watchedKeys{Storage: jwkset.NewMemoryStorage(), changed: changed},
	})
	if err != nil {
		return nil, err
	}
	client, err := jwkset.NewHTTPClient(jwkset.HTTPClientOptions{
		HTTPURLs:          map[string]jwkset.Storage{u: store},
		RateLimitWaitMax:  time.Minute,
		RefreshUnknownKID: rate.NewLimiter(rate.Every(unknownKID), 1),
	})
	if err != nil {
		return nil, err
	}
	k, err := keyfunc.New(keyfunc.Options{Ctx: ctx, Storage: client})
	if err != nil {
		return nil, err
	}
	return k.KeyfuncCtx(ctx), nil
}

// watchedKeys is the store a JWKS refresh writes into. A key set that only
// gains keys changes nothing for tokens already verified; one that loses or
// alters a key calls changed, so a revoked key stops being accepted at once
// instead of living on in cached verifications.
type watchedKeys struct {
	jwkset.Storage
	changed func()
	// mu serialises replacements: two refreshes at once (the hourly one and
	// an unknown kid's) must each compare against the set the other left.
	mu sync.Mutex
}

func (w *watchedKeys) KeyReplaceAll(ctx context.Context, given []jwkset.JWK) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	old, err := w.Storage.KeyReadAll(ctx)
	if err != nil {
		w.changed()
		return fmt.Errorf("read buyer jwks before refresh: %w", err)
	}
	// Replace first, flush after: a verification that starts after the
	// flush can only see the new keys.
	if err := w.Storage.KeyReplaceAll(ctx, given); err != nil {
		w.changed()
		return err
	}
	if !keepsAll(old, given) {
		w.changed()
	}
	return nil
}

func (w *watchedKeys) KeyDelete(ctx context.Context, keyID string) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ok, err := w.Storage.KeyDelete(ctx, keyID)
	if ok || err != nil {
		w.changed()
	}
	return ok, err
}

// KeyWrite may overwrite a key under the same kid with other material.
func (w *watchedKeys) KeyWrite(ctx context.Context, jwk jwkset.JWK) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.Storage.KeyWrite(ctx, jwk)
	w.changed()
	return err
}

// keepsAll reports whether every key of old is in next, unchanged.
func keepsAll(old, next []jwkset.JWK) bool {
	have := make(map[string]bool, len(next))
	for _, k := range next {
		f, ok := fingerprint(k)
		if !ok {
			return false
		}
		have[f] = true
	}
	for _, k := range old {
		f, ok := fingerprint(k)
		if !ok || !have[f] {
			return false
		}
	}
	return true
}

// fingerprint is a key's published form: kid, alg, use and the key
// material, so the same kid with a new key counts as a different key.
func fingerprint(k jwkset.JWK) (string, bool) {
	b, err := json.Marshal(k.Marshal())
	return string(b), err == nil
}

package identity_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/identity"
)

// clock is a settable time for the verifier.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock { c := &clock{}; c.set(t); return c }
func (c *clock) set(t time.Time)  { c.ns.Store(t.UnixNano()) }
func (c *clock) now() time.Time   { return time.Unix(0, c.ns.Load()) }

// t0 is a whole second: JWT times are.
var t0 = time.Unix(1_900_000_000, 0)

func TestCacheRechecksTimeOnEveryHit(t *testing.T) {
	clk := newClock(t0)
	v, err := identity.NewVerifier(t.Context(), identity.Config{Secret: secret, Now: clk.now})
	require.NoError(t, err)

	tok := sign(t, jwt.SigningMethodHS256, secret, "", jwt.MapClaims{"sub": "alice", "exp": t0.Add(time.Minute).Unix()})
	buyer, err := v.Buyer(tok)
	require.NoError(t, err)
	require.Equal(t, "alice", buyer)
	require.Equal(t, 1, v.CachedTokens())

	// exp plus the 30 s leeway, less a second: still good, from the cache.
	clk.set(t0.Add(time.Minute + 29*time.Second))
	buyer, err = v.Buyer(tok)
	require.NoError(t, err)
	require.Equal(t, "alice", buyer)
	require.Equal(t, 1, v.CachedTokens())

	// At exp plus the leeway the cached token is refused and forgotten.
	clk.set(t0.Add(time.Minute + 30*time.Second))
	_, err = v.Buyer(tok)
	require.ErrorIs(t, err, identity.ErrUnauthenticated)
	require.ErrorIs(t, err, jwt.ErrTokenExpired)
	require.Equal(t, 0, v.CachedTokens())
	_, err = v.Buyer(tok)
	require.ErrorIs(t, err, jwt.ErrTokenExpired, "and stays refused once verified in full")
	require.Equal(t, 0, v.CachedTokens())

	// nbf is checked on a hit too: a clock stepped back before nbf less the
	// leeway refuses a token cached a moment ago.
	clk.set(t0)
	early := sign(t, jwt.SigningMethodHS256, secret, "", jwt.MapClaims{
		"sub": "bob", "nbf": t0.Add(10 * time.Second).Unix(), "exp": t0.Add(time.Hour).Unix(),
	})
	_, err = v.Buyer(early)
	require.NoError(t, err, "nbf 10 s ahead is within the leeway")
	require.Equal(t, 1, v.CachedTokens())
	clk.set(t0.Add(-21 * time.Second))
	_, err = v.Buyer(early)
	require.ErrorIs(t, err, identity.ErrUnauthenticated)
	require.ErrorIs(t, err, jwt.ErrTokenNotValidYet)
	require.Equal(t, 0, v.CachedTokens())
}

// alter returns tok with the character at i replaced by another base64url
// character.
func alter(tok string, i int) string {
	c := byte('A')
	if tok[i] == 'A' {
		c = 'B'
	}
	return tok[:i] + string(c) + tok[i+1:]
}

func TestCacheAlteredTokenNeverHits(t *testing.T) {
	v, err := identity.NewVerifier(t.Context(), identity.Config{Secret: secret})
	require.NoError(t, err)
	tok := sign(t, jwt.SigningMethodHS256, secret, "", jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(time.Hour).Unix()})
	_, err = v.Buyer(tok)
	require.NoError(t, err)
	require.Equal(t, 1, v.CachedTokens())

	dot1 := len(tok) - len(tok[indexDot(tok)+1:]) - 1
	dot2 := lastDot(tok)
	for name, bad := range map[string]string{
		"header byte":    alter(tok, dot1/2),
		"payload byte":   alter(tok, (dot1+dot2)/2),
		"signature byte": alter(tok, (dot2+len(tok))/2),
		"one byte more":  tok + "A",
		"one byte less":  tok[:len(tok)-1],
	} {
		t.Run(name, func(t *testing.T) {
			require.NotEqual(t, tok, bad)
			_, err := v.Buyer(bad)
			require.ErrorIs(t, err, identity.ErrUnauthenticated)
			require.Equal(t, 1, v.CachedTokens(), "only the original is cached")
		})
	}
	buyer, err := v.Buyer(tok)
	require.NoError(t, err)
	require.Equal(t, "alice", buyer)
}

func indexDot(s string) int {
	for i := range len(s) {
		if s[i] == '.' {
			return i
		}
	}
	return -1
}

func lastDot(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '.' {
			return i
		}
	}
	return -1
}

func TestCacheKeepsNoFailure(t *testing.T) {
	// HS256: the refusals of TestHS256 leave nothing behind.
	v, err := identity.NewVerifier(t.Context(), identity.Config{Secret: secret, Audience: "shop"})
	require.NoError(t, err)
	exp := time.Now().Add(time.Hour).Unix()
	for _, claims := range []jwt.MapClaims{
		{"sub": "alice", "aud": "shop", "exp": time.Now().Add(-time.Hour).Unix()},
		{"sub": "alice", "aud": "admin", "exp": exp},
		{"sub": "alice", "aud": "shop"},
		{"aud": "shop", "exp": exp},
	} {
		tok := sign(t, jwt.SigningMethodHS256, secret, "", claims)
		for range 3 {
			_, err := v.Buyer(tok)
			require.ErrorIs(t, err, identity.ErrUnauthenticated)
		}
	}
	_, err = v.Buyer(sign(t, jwt.SigningMethodHS256, []byte("another-secret-0123456789abcdef-xyz"), "", jwt.MapClaims{"sub": "alice", "aud": "shop", "exp": exp}))
	require.ErrorIs(t, err, identity.ErrUnauthenticated)
	require.Equal(t, 0, v.CachedTokens())

	// JWKS: a token refused because its kid is unknown passes once the IdP
	// publishes the key.
	rsa1, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	rsa2, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	srv := newJWKSServer(t)
	srv.publish(t, &rsa1.PublicKey, jwkset.AlgRS256, "rsa-1")
	jv, err := identity.NewVerifier(t.Context(), identity.WithJWKSRefresh(identity.Config{JWKSURL: srv.URL}, time.Hour, time.Millisecond))
	require.NoError(t, err)
	early := sign(t, jwt.SigningMethodRS256, rsa2, "rsa-2", jwt.MapClaims{"sub": "dave", "exp": exp})
	_, err = jv.Buyer(early)
	require.ErrorIs(t, err, identity.ErrUnauthenticated)
	require.ErrorIs(t, err, jwkset.ErrKeyNotFound)
	require.Equal(t, 0, jv.CachedTokens())

	srv.publish(t, &rsa2.PublicKey, jwkset.AlgRS256, "rsa-2")
	buyer, err := jv.Buyer(early)
	require.NoError(t, err)
	require.Equal(t, "dave", buyer)
	require.Equal(t, 1, jv.CachedTokens())
}

func TestCacheBound(t *testing.T) {
	v, err := identity.NewVerifier(t.Context(), identity.Config{Secret: secret, CacheSize: 8})
	require.NoError(t, err)
	exp := time.Now().Add(time.Hour).Unix()
	toks := make([]string, 100)
	for i := range toks {
		toks[i] = sign(t, jwt.SigningMethodHS256, secret, "", jwt.MapClaims{"sub": fmt.Sprint("buyer-", i), "exp": exp})
		buyer, err := v.Buyer(toks[i])
		require.NoError(t, err)
		require.Equal(t, fmt.Sprint("buyer-", i), buyer)
		require.Equal(t, min(i+1, 8), v.CachedTokens())
	}
	// An evicted token is verified again and takes a place again.
	buyer, err := v.Buyer(toks[0])
	require.NoError(t, err)
	require.Equal(t, "buyer-0", buyer)
	require.Equal(t, 8, v.CachedTokens())

	off, err := identity.NewVerifier(t.Context(), identity.Config{Secret: secret, CacheSize: -1})
	require.NoError(t, err)
	_, err = off.Buyer(toks[0])
	require.NoError(t, err)
	require.Equal(t, 0, off.CachedTokens())
}

// withdraw removes the key kid from the published set.
func (s *jwksServer) withdraw(kid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := s.keys[:0:0]
	for _, k := range s.keys {
		if k.KID != kid {
			keys = append(keys, k)
		}
	}
	s.keys = keys
}

func TestCacheFlushedWhenKeySetChanges(t *testing.T) {
	rsa1, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	rsa3, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	ec2, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	exp := time.Now().Add(time.Hour).Unix()
	claims := jwt.MapClaims{"sub": "erin", "exp": exp}
	tok1 := sign(t, jwt.SigningMethodRS256, rsa1, "rsa-1", claims)
	tok2 := sign(t, jwt.SigningMethodES256, ec2, "ec-2", claims)
	tok3 := sign(t, jwt.SigningMethodRS256, rsa3, "rsa-3", claims)

	t.Run("rotation on an unknown kid", func(t *testing.T) {
		srv := newJWKSServer(t)
		srv.publish(t, &rsa1.PublicKey, jwkset.AlgRS256, "rsa-1")
		v, err := identity.NewVerifier(t.Context(), identity.WithJWKSRefresh(identity.Config{JWKSURL: srv.URL}, time.Hour, time.Millisecond))
		require.NoError(t, err)
		_, err = v.Buyer(tok1)
		require.NoError(t, err)
		require.Equal(t, 1, v.CachedTokens())

		// A key added takes nothing away: tok1 stays cached.
		srv.publish(t, &ec2.PublicKey, jwkset.AlgES256, "ec-2")
		fetches := srv.fetches.Load()
		_, err = v.Buyer(tok2)
		require.NoError(t, err)
		require.Greater(t, srv.fetches.Load(), fetches)
		require.Equal(t, 2, v.CachedTokens())

		// rsa-1 is revoked as rsa-3 comes in: the refresh that rsa-3's kid
		// sets off empties the cache and tok1 is refused at once.
		srv.withdraw("rsa-1")
		srv.publish(t, &rsa3.PublicKey, jwkset.AlgRS256, "rsa-3")
		_, err = v.Buyer(tok3)
		require.NoError(t, err)
		// The flush came in while tok3 was being verified, so tok3 is not
		// cached either: what a verification spanning a flush checked is
		// never trusted. Its next use caches it.
		require.Equal(t, 0, v.CachedTokens(), "flushed")
		_, err = v.Buyer(tok3)
		require.NoError(t, err)
		require.Equal(t, 1, v.CachedTokens())
		_, err = v.Buyer(tok1)
		require.ErrorIs(t, err, identity.ErrUnauthenticated)
		require.ErrorIs(t, err, jwkset.ErrKeyNotFound)
		buyer, err := v.Buyer(tok2)
		require.NoError(t, err, "a key still published still verifies")
		require.Equal(t, "erin", buyer)
		require.Equal(t, 2, v.CachedTokens())
	})

	t.Run("key removed at the periodic refresh", func(t *testing.T) {
		srv := newJWKSServer(t)
		srv.publish(t, &rsa1.PublicKey, jwkset.AlgRS256, "rsa-1")
		srv.publish(t, &ec2.PublicKey, jwkset.AlgES256, "ec-2")
		// The unknown-kid refresh is held off for an hour: only the
		// periodic one can notice.
		v, err := identity.NewVerifier(t.Context(), identity.WithJWKSRefresh(identity.Config{JWKSURL: srv.URL}, 20*time.Millisecond, time.Hour))
		require.NoError(t, err)
		_, err = v.Buyer(tok1)
		require.NoError(t, err)
		_, err = v.Buyer(tok2)
		require.NoError(t, err)
		require.Equal(t, 2, v.CachedTokens())

		srv.withdraw("rsa-1")
		require.Eventually(t, func() bool { return v.CachedTokens() == 0 }, 5*time.Second, 5*time.Millisecond)
		_, err = v.Buyer(tok1)
		require.ErrorIs(t, err, identity.ErrUnauthenticated)
		_, err = v.Buyer(tok2)
		require.NoError(t, err)
	})

	t.Run("same kid, new key", func(t *testing.T) {
		srv := newJWKSServer(t)
		srv.publish(t, &rsa1.PublicKey, jwkset.AlgRS256, "rsa-1")
		v, err := identity.NewVerifier(t.Context(), identity.WithJWKSRefresh(identity.Config{JWKSURL: srv.URL}, 20*time.Millisecond, time.Hour))
		require.NoError(t, err)
		_, err = v.Buyer(tok1)
		require.NoError(t, err)
		require.Equal(t, 1, v.CachedTokens())

		srv.withdraw("rsa-1")
		srv.publish(t, &rsa3.PublicKey, jwkset.AlgRS256, "rsa-1")
		require.Eventually(t, func() bool { return v.CachedTokens() == 0 }, 5*time.Second, 5*time.Millisecond)
		_, err = v.Buyer(tok1)
		require.ErrorIs(t, err, identity.ErrUnauthenticated)
		require.ErrorIs(t, err, jwt.ErrTokenSignatureInvalid)
		buyer, err := v.Buyer(sign(t, jwt.SigningMethodRS256, rsa3, "rsa-1", claims))
		require.NoError(t, err)
		require.Equal(t, "erin", buyer)
	})
}

// TestCacheConcurrent verifies good and bad tokens from many goroutines
// while the key set keeps changing under them; run it with -race.
func TestCacheConcurrent(t *testing.T) {
	rsa1, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	ec2, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	srv := newJWKSServer(t)
	srv.publish(t, &rsa1.PublicKey, jwkset.AlgRS256, "rsa-1")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	v, err := identity.NewVerifier(ctx, identity.WithJWKSRefresh(identity.Config{JWKSURL: srv.URL, CacheSize: 16}, 2*time.Millisecond, time.Hour))
	require.NoError(t, err)

	exp := time.Now().Add(time.Hour).Unix()
	good := make([]string, 24)
	for i := range good {
		good[i] = sign(t, jwt.SigningMethodRS256, rsa1, "rsa-1", jwt.MapClaims{"sub": fmt.Sprint("buyer-", i), "exp": exp})
	}
	forged := sign(t, jwt.SigningMethodES256, ec2, "rsa-1", jwt.MapClaims{"sub": "mallory", "exp": exp})

	// The set gains and loses ec-2 over and over: every loss flushes.
	stop := make(chan struct{})
	var rotator sync.WaitGroup
	rotator.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(3 * time.Millisecond):
			}
			if i%2 == 0 {
				srv.publish(t, &ec2.PublicKey, jwkset.AlgES256, "ec-2")
			} else {
				srv.withdraw("ec-2")
			}
		}
	})

	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 150 {
				n := (g*7 + i) % len(good)
				buyer, err := v.Buyer(good[n])
				if !assert.NoError(t, err) || buyer != fmt.Sprint("buyer-", n) {
					t.Errorf("token %d: buyer %q", n, buyer)
					return
				}
				if i%10 == 0 {
					if _, err := v.Buyer(forged); err == nil {
						t.Error("a token signed with the wrong key passed")
						return
					}
				}
				if c := v.CachedTokens(); c > 16 {
					t.Errorf("%d tokens cached, bound 16", c)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	rotator.Wait()
}

func TestLoadConfigCacheSize(t *testing.T) {
	for in, want := range map[string]int{"": 0, "500": 500, " 64 ": 64, "0": -1} {
		cfg, err := identity.LoadConfig(env(map[string]string{"BUYER_JWT_SECRET": string(secret), "BUYER_TOKEN_CACHE_SIZE": in}))
		require.NoError(t, err, in)
		require.Equal(t, want, cfg.CacheSize, in)
	}
	for _, in := range []string{"-1", "many"} {
		_, err := identity.LoadConfig(env(map[string]string{"BUYER_JWT_SECRET": string(secret), "BUYER_TOKEN_CACHE_SIZE": in}))
		require.ErrorContains(t, err, "BUYER_TOKEN_CACHE_SIZE", in)
	}
}

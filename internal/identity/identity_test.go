package identity_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/identity"
)

var secret = []byte("buyer-test-secret-0123456789abcdef")

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadConfig(t *testing.T) {
	for name, tc := range map[string]struct {
		env     map[string]string
		wantErr string
	}{
		"nothing":      {map[string]string{}, "BUYER_JWT_SECRET or BUYER_JWKS_URL must be set"},
		"short secret": {map[string]string{"BUYER_JWT_SECRET": "0123456789abcdef0123456789abcde"}, "at least 32 bytes"},
		"both":         {map[string]string{"BUYER_JWT_SECRET": string(secret), "BUYER_JWKS_URL": "https://idp/jwks"}, "not both"},
		"not a url":    {map[string]string{"BUYER_JWKS_URL": "idp/jwks"}, "http(s) URL"},
		"secret":       {map[string]string{"BUYER_JWT_SECRET": string(secret), "BUYER_JWT_AUDIENCE": "shop"}, ""},
		"jwks":         {map[string]string{"BUYER_JWKS_URL": "https://idp.example/.well-known/jwks.json"}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := identity.LoadConfig(env(tc.env))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.env["BUYER_JWT_AUDIENCE"], cfg.Audience)
		})
	}
}

func sign(t *testing.T, method jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

func TestHS256(t *testing.T) {
	now := time.Now()
	v, err := identity.NewVerifier(t.Context(), identity.Config{Secret: secret, Audience: "shop", Issuer: "login"})
	require.NoError(t, err)
	good := jwt.MapClaims{"sub": "alice", "aud": "shop", "iss": "login", "exp": now.Add(time.Minute).Unix()}
	with := func(k string, val any) jwt.MapClaims {
		c := jwt.MapClaims{}
		for key, x := range good {
			c[key] = x
		}
		if val == nil {
			delete(c, k)
		} else {
			c[k] = val
		}
		return c
	}

	buyer, err := v.Buyer(sign(t, jwt.SigningMethodHS256, secret, "", good))
	require.NoError(t, err)
	require.Equal(t, "alice", buyer)

	// Within the allowed skew an expired token still passes; beyond it, not.
	_, err = v.Buyer(sign(t, jwt.SigningMethodHS256, secret, "", with("exp", now.Add(-10*time.Second).Unix())))
	require.NoError(t, err, "10 s of clock skew is tolerated")

	m, err := identity.NewMinter(identity.Config{Secret: secret, Audience: "shop", Issuer: "login"})
	require.NoError(t, err)
	minted, err := m.Token("bob", time.Minute)
	require.NoError(t, err)
	buyer, err = v.Buyer(minted)
	require.NoError(t, err)
	require.Equal(t, "bob", buyer, "the minter's tokens verify")

	noneTok, err := jwt.NewWithClaims(jwt.SigningMethodNone, good).SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)
	hs512, err := jwt.NewWithClaims(jwt.SigningMethodHS512, good).SignedString(secret)
	require.NoError(t, err)

	for name, tok := range map[string]string{
		"empty":          "",
		"garbage":        "not.a.jwt",
		"wrong secret":   sign(t, jwt.SigningMethodHS256, []byte("another-secret-0123456789abcdef-xyz"), "", good),
		"expired":        sign(t, jwt.SigningMethodHS256, secret, "", with("exp", now.Add(-2*time.Minute).Unix())),
		"no exp":         sign(t, jwt.SigningMethodHS256, secret, "", with("exp", nil)),
		"no sub":         sign(t, jwt.SigningMethodHS256, secret, "", with("sub", nil)),
		"other audience": sign(t, jwt.SigningMethodHS256, secret, "", with("aud", "admin-console")),
		"other issuer":   sign(t, jwt.SigningMethodHS256, secret, "", with("iss", "evil")),
		"not yet valid":  sign(t, jwt.SigningMethodHS256, secret, "", with("nbf", now.Add(5*time.Minute).Unix())),
		"alg none":       noneTok,
		"other alg":      hs512,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := v.Buyer(tok)
			require.ErrorIs(t, err, identity.ErrUnauthenticated)
		})
	}
}

// jwksServer publishes a JWKS whose keys the test can rotate, and counts
// fetches.
type jwksServer struct {
	mu      sync.Mutex
	keys    []jwkset.JWKMarshal
	fetches atomic.Int64
	*httptest.Server
}

func newJWKSServer(t testing.TB) *jwksServer {
	s := &jwksServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jwkset.JWKSMarshal{Keys: s.keys})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) publish(t testing.TB, pub crypto.PublicKey, alg jwkset.ALG, kid string) {
	t.Helper()
	k, err := jwkset.NewJWKFromKey(pub, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{ALG: alg, KID: kid, USE: jwkset.UseSig}})
	require.NoError(t, err)
	s.mu.Lock()
	s.keys = append(s.keys, k.Marshal())
	s.mu.Unlock()
}

func TestJWKS(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	srv := newJWKSServer(t)
	srv.publish(t, &rsaKey.PublicKey, jwkset.AlgRS256, "rsa-1")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	v, err := identity.NewVerifier(ctx, identity.Config{JWKSURL: srv.URL})
	require.NoError(t, err)
	claims := jwt.MapClaims{"sub": "carol", "exp": time.Now().Add(time.Minute).Unix()}

	buyer, err := v.Buyer(sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", claims))
	require.NoError(t, err)
	require.Equal(t, "carol", buyer)

	// The IdP rotates in an EC key: the first token naming the unknown kid
	// makes the verifier fetch the set again.
	before := srv.fetches.Load()
	srv.publish(t, &ecKey.PublicKey, jwkset.AlgES256, "ec-2")
	buyer, err = v.Buyer(sign(t, jwt.SigningMethodES256, ecKey, "ec-2", claims))
	require.NoError(t, err)
	require.Equal(t, "carol", buyer)
	require.Greater(t, srv.fetches.Load(), before, "an unknown kid refreshes the key set")

	otherRSA, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	pubDER, err := json.Marshal(rsaKey.PublicKey)
	require.NoError(t, err)
	for name, tok := range map[string]string{
		"signed by a key not in the set": sign(t, jwt.SigningMethodRS256, otherRSA, "rsa-1", claims),
		"unknown kid":                    sign(t, jwt.SigningMethodRS256, otherRSA, "rsa-9", claims),
		// Alg confusion: HS256 keyed with public material must not pass.
		"hs256 with the public key": sign(t, jwt.SigningMethodHS256, pubDER, "rsa-1", claims),
		"expired": sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1",
			jwt.MapClaims{"sub": "carol", "exp": time.Now().Add(-time.Hour).Unix()}),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := v.Buyer(tok)
			require.ErrorIs(t, err, identity.ErrUnauthenticated)
		})
	}
}

func TestBearerToken(t *testing.T) {
	require.Equal(t, "abc", identity.BearerToken("Bearer abc"))
	require.Equal(t, "abc", identity.BearerToken("bearer  abc"))
	require.Equal(t, "", identity.BearerToken("Basic abc"))
	require.Equal(t, "", identity.BearerToken("abc"))
	require.Equal(t, "", identity.BearerToken(""))
}

package identity_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/flashsale/flashsale/internal/identity"
)

// BenchmarkBuyer verifies one token over and over, as at the peak of a
// sale, with the cache off and on; "miss" cycles through more distinct
// tokens than the cache holds, the cost of a cache that never helps. Each
// cached run reports its time as a fraction of the uncached run before it
// (x_uncached).
//
//	go test -run '^$' -bench . -benchmem ./internal/identity/
func BenchmarkBuyer(b *testing.B) {
	exp := time.Now().Add(time.Hour).Unix()
	claims := jwt.MapClaims{"sub": "buyer-42", "aud": "shop", "iss": "login", "exp": exp}

	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	srv := newJWKSServer(b)
	srv.publish(b, &rsaKey.PublicKey, jwkset.AlgRS256, "rsa-1")
	srv.publish(b, &ecKey.PublicKey, jwkset.AlgES256, "ec-1")

	for _, alg := range []struct {
		name  string
		cfg   identity.Config
		token func(sub string) string
	}{
		{"HS256", identity.Config{Secret: secret, Audience: "shop", Issuer: "login"}, func(sub string) string {
			return signB(b, jwt.SigningMethodHS256, secret, "", claims, sub)
		}},
		{"RS256", identity.Config{JWKSURL: srv.URL, Audience: "shop", Issuer: "login"}, func(sub string) string {
			return signB(b, jwt.SigningMethodRS256, rsaKey, "rsa-1", claims, sub)
		}},
		{"ES256", identity.Config{JWKSURL: srv.URL, Audience: "shop", Issuer: "login"}, func(sub string) string {
			return signB(b, jwt.SigningMethodES256, ecKey, "ec-1", claims, sub)
		}},
	} {
		var uncached float64
		tok := alg.token("buyer-42")
		run := func(b *testing.B, size int, toks []string) float64 {
			cfg := alg.cfg
			cfg.CacheSize = size
			v, err := identity.NewVerifier(b.Context(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := v.Buyer(toks[i%len(toks)]); err != nil {
					b.Fatal(err)
				}
			}
			return float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		}
		ratio := func(b *testing.B, ns float64) {
			if uncached > 0 {
				b.ReportMetric(ns/uncached, "x_uncached")
			}
		}
		b.Run(alg.name+"/uncached", func(b *testing.B) { uncached = run(b, -1, []string{tok}) })
		b.Run(alg.name+"/cached", func(b *testing.B) { ratio(b, run(b, 0, []string{tok})) })
		if alg.name == "HS256" {
			// 2x the cache: with LRU, every lookup misses and evicts.
			toks := make([]string, 2*64)
			for i := range toks {
				toks[i] = alg.token(fmt.Sprint("buyer-", i))
			}
			b.Run(alg.name+"/miss", func(b *testing.B) { ratio(b, run(b, 64, toks)) })
		}
	}
}

func signB(b *testing.B, method jwt.SigningMethod, key any, kid string, claims jwt.MapClaims, sub string) string {
	c := jwt.MapClaims{}
	for k, v := range claims {
		c[k] = v
	}
	c["sub"] = sub
	tok := jwt.NewWithClaims(method, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

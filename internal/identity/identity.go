// Package identity tells who a buyer is: it verifies the bearer JWT the
// shop's identity provider issued and returns its subject, the buyer id
// every per-user rule (limits, rate limits, order ownership, the waitlist)
// keys on. A user id in a request body is never trusted on its own.
//
// Two ways to trust an identity provider, chosen by the environment:
//   - BUYER_JWT_SECRET: HS256 with a shared secret of at least 32 bytes
//     (the shop's own login service, the demo and the tests);
//   - BUYER_JWKS_URL: RS256/ES256 keys published by a real IdP as a JWKS,
//     fetched at start, refreshed hourly and when an unknown key id shows
//     up (github.com/MicahParks/keyfunc).
//
// Either way `exp` is required, a small clock skew is allowed, and `aud`
// and `iss` are checked when BUYER_JWT_AUDIENCE / BUYER_JWT_ISSUER are set.
package identity

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flashsale/flashsale"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
)

// ErrUnauthenticated is every reason a token is refused: missing,
// malformed, badly signed, expired, for another audience or issuer. The
// wrapped text says which, for the log; clients get one answer.
var ErrUnauthenticated error = &flashsale.Error{Code: flashsale.Unauthenticated, Message: "unauthenticated"}

// MinSecretLen is the shortest HS256 secret accepted: RFC 7518 asks for a
// key at least as long as the hash (256 bits).
const MinSecretLen = 32

// DefaultLeeway is the clock skew allowed on exp, nbf and iat: the IdP's
// clock and ours are both NTP-synced, but not to the millisecond.
const DefaultLeeway = 30 * time.Second

// Config says which identity provider to trust.
type Config struct {
	// Secret is the HS256 key (BUYER_JWT_SECRET).
	Secret []byte
	// JWKSURL is where the IdP publishes its public keys (BUYER_JWKS_URL).
	JWKSURL string
	// Audience and Issuer, when set, must match the token's aud and iss
	// (BUYER_JWT_AUDIENCE, BUYER_JWT_ISSUER).
	Audience, Issuer string
	// Leeway is the allowed clock skew; zero means DefaultLeeway.
	Leeway time.Duration
}

// LoadConfig reads the settings above from getenv. It refuses a config that
// trusts nobody, or a secret too short to be one.
func LoadConfig(getenv func(string) string) (Config, error) {
	cfg := Config{
		Secret:   []byte(getenv("BUYER_JWT_SECRET")),
		JWKSURL:  strings.TrimSpace(getenv("BUYER_JWKS_URL")),
		Audience: getenv("BUYER_JWT_AUDIENCE"),
		Issuer:   getenv("BUYER_JWT_ISSUER"),
	}
	return cfg, cfg.Validate()
}

// Validate checks that exactly one way of verifying tokens is configured.
func (c Config) Validate() error {
	switch {
	case len(c.Secret) == 0 && c.JWKSURL == "":
		return errors.New("BUYER_JWT_SECRET or BUYER_JWKS_URL must be set: buyers are identified by their bearer token")
	case len(c.Secret) > 0 && c.JWKSURL != "":
		return errors.New("set one of BUYER_JWT_SECRET and BUYER_JWKS_URL, not both")
	case c.JWKSURL == "" && len(c.Secret) < MinSecretLen:
		return fmt.Errorf("BUYER_JWT_SECRET must be at least %d bytes", MinSecretLen)
	case c.JWKSURL != "" && !strings.HasPrefix(c.JWKSURL, "https://") && !strings.HasPrefix(c.JWKSURL, "http://"):
		return errors.New("BUYER_JWKS_URL must be an http(s) URL")
	}
	return nil
}

// Verifier checks buyer tokens. Safe for concurrent use.
type Verifier struct {
	parser  *jwt.Parser
	keyfunc jwt.Keyfunc
}

// NewVerifier builds a verifier for cfg. With a JWKS URL it fetches the keys
// once (a failure is logged and retried, so the API can start while the IdP
// is briefly away) and keeps refreshing them until ctx ends.
func NewVerifier(ctx context.Context, cfg Config) (*Verifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	leeway := cfg.Leeway
	if leeway <= 0 {
		leeway = DefaultLeeway
	}
	opts := []jwt.ParserOption{jwt.WithExpirationRequired(), jwt.WithLeeway(leeway), jwt.WithIssuedAt()}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	v := &Verifier{}
	if cfg.JWKSURL != "" {
		// Only asymmetric algorithms: an HS256 token "signed" with the
		// public key would otherwise verify (the classic alg confusion).
		opts = append(opts, jwt.WithValidMethods([]string{"RS256", "ES256"}))
		k, err := keyfunc.NewDefaultCtx(ctx, []string{cfg.JWKSURL})
		if err != nil {
			return nil, fmt.Errorf("buyer jwks %s: %w", cfg.JWKSURL, err)
		}
		v.keyfunc = k.KeyfuncCtx(ctx)
	} else {
		opts = append(opts, jwt.WithValidMethods([]string{"HS256"}))
		secret := cfg.Secret
		v.keyfunc = func(*jwt.Token) (any, error) { return secret, nil }
	}
	v.parser = jwt.NewParser(opts...)
	return v, nil
}

// Buyer verifies token and returns its subject. Every failure wraps
// ErrUnauthenticated.
func (v *Verifier) Buyer(token string) (string, error) {
	if token == "" {
		return "", fmt.Errorf("%w: no bearer token", ErrUnauthenticated)
	}
	var claims jwt.RegisteredClaims
	if _, err := v.parser.ParseWithClaims(token, &claims, v.keyfunc); err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	if claims.Subject == "" {
		return "", fmt.Errorf("%w: token has no subject", ErrUnauthenticated)
	}
	return claims.Subject, nil
}

// Minter issues HS256 buyer tokens, as the shop's login service would: for
// the demo, the load generator, the benchmark, the tests and
// `starter token`. A production API only verifies.
type Minter struct {
	Secret           []byte
	Audience, Issuer string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// NewMinter mints tokens the verifier of cfg accepts; cfg must use a secret.
func NewMinter(cfg Config) (*Minter, error) {
	if len(cfg.Secret) < MinSecretLen {
		return nil, fmt.Errorf("minting buyer tokens needs BUYER_JWT_SECRET of at least %d bytes", MinSecretLen)
	}
	return &Minter{Secret: cfg.Secret, Audience: cfg.Audience, Issuer: cfg.Issuer}, nil
}

// Token returns a token for buyer, valid for ttl.
func (m *Minter) Token(buyer string, ttl time.Duration) (string, error) {
	now := time.Now()
	if m.Now != nil {
		now = m.Now()
	}
	claims := jwt.RegisteredClaims{
		Subject:   buyer,
		Issuer:    m.Issuer,
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}
	if m.Audience != "" {
		claims.Audience = jwt.ClaimStrings{m.Audience}
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(m.Secret)
	if err != nil {
		return "", fmt.Errorf("sign buyer token for %s: %w", buyer, err)
	}
	return s, nil
}

// BearerToken returns the token of an `Authorization: Bearer <token>`
// header value, or "" when there is none.
func BearerToken(header string) string {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

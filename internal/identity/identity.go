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
//
// A token that verified is remembered (BUYER_TOKEN_CACHE_SIZE of them, least
// recently used out first), so the same token repeated at the peak of a sale
// is not verified again; its exp, nbf and iat are still checked on every use,
// and the cache is emptied when the JWKS loses or changes a key.
package identity

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flashsale/flashsale"

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
	// CacheSize is how many verified tokens are remembered
	// (BUYER_TOKEN_CACHE_SIZE); zero means DefaultCacheSize, a negative
	// size turns the cache off.
	CacheSize int
	// Now is the clock tokens are checked against; nil means time.Now.
	Now func() time.Time

	// How often the JWKS is fetched again, and at most how often an unknown
	// kid may fetch it; zero means hourly and five minutes. Set by tests.
	jwksRefresh, jwksUnknownKID time.Duration
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
	if s := strings.TrimSpace(getenv("BUYER_TOKEN_CACHE_SIZE")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return cfg, fmt.Errorf("BUYER_TOKEN_CACHE_SIZE must be a number of tokens, 0 for none: %q", s)
		}
		cfg.CacheSize = n
		if n == 0 {
			cfg.CacheSize = -1
		}
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
	// validator checks a cached token's claims with the parser's options:
	// the same leeway, clock, audience and issuer.
	validator *jwt.Validator
	// cache is nil when turned off.
	cache *tokenCache
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
	if cfg.Now != nil {
		opts = append(opts, jwt.WithTimeFunc(cfg.Now))
	}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	v := &Verifier{validator: jwt.NewValidator(opts...)}
	size := cfg.CacheSize
	if size == 0 {
		size = DefaultCacheSize
	}
	// A flush of no cache is nothing; the JWKS watcher calls it all the same.
	flush := func() {}
	if size > 0 {
		v.cache = newTokenCache(size)
		flush = v.cache.flush
	}
	if cfg.JWKSURL != "" {
		// Only asymmetric algorithms: an HS256 token "signed" with the
		// public key would otherwise verify (the classic alg confusion).
		opts = append(opts, jwt.WithValidMethods([]string{"RS256", "ES256"}))
		k, err := jwksKeyfunc(ctx, cfg, flush)
		if err != nil {
			return nil, fmt.Errorf("buyer jwks %s: %w", cfg.JWKSURL, err)
		}
		v.keyfunc = k
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
	if v.cache == nil {
		claims, err := v.verify(token)
		if err != nil {
			return "", err
		}
		return claims.Subject, nil
	}
	key := keyOf(token)
	if claims, ok := v.cache.get(key); ok {
		// The signature was good and stays good; the time does not.
		if err := v.validator.Validate(claims); err != nil {
			v.cache.remove(key)
			return "", fmt.Errorf("%w: %w", ErrUnauthenticated, err)
		}
		return claims.Subject, nil
	}
	gen := v.cache.generation()
	claims, err := v.verify(token)
	if err != nil {
		// Never cached: a token refused for an unknown key may pass once
		// the key set has it.
		return "", err
	}
	v.cache.add(gen, key, claims)
	return claims.Subject, nil
}

// verify checks token's signature and claims in full.
func (v *Verifier) verify(token string) (*jwt.RegisteredClaims, error) {
	claims := new(jwt.RegisteredClaims)
	if _, err := v.parser.ParseWithClaims(token, claims, v.keyfunc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	if claims.Subject == "" {
		return nil, fmt.Errorf("%w: token has no subject", ErrUnauthenticated)
	}
	return claims, nil
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

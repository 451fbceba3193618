package identity

import "time"

// WithJWKSRefresh makes cfg's JWKS refresh every `every` and allows an
// unknown kid to refresh it every `unknownKID`, so tests need not wait
// hours.
func WithJWKSRefresh(cfg Config, every, unknownKID time.Duration) Config {
	cfg.jwksRefresh, cfg.jwksUnknownKID = every, unknownKID
	return cfg
}

// CachedTokens is how many verified tokens v remembers.
func (v *Verifier) CachedTokens() int {
	if v.cache == nil {
		return 0
	}
	return v.cache.len()
}

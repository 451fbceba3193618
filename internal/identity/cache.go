package identity

import (
	"crypto/sha256"
	"sync"
	"sync/atomic"

	"github.com/golang-jwt/jwt/v5"
	lru "github.com/hashicorp/golang-lru/v2"
)

// DefaultCacheSize is how many verified tokens a verifier remembers: at
// the peak of a sale every buyer repeats one token, and an entry costs a few
// hundred bytes, so ten thousand buyers cost a few megabytes.
const DefaultCacheSize = 10_000

// tokenKey names a token in the cache. SHA-256 of the whole compact token,
// not a fast map hash: nobody can craft a second token, altered in any
// byte, that lands on another token's entry.
type tokenKey [sha256.Size]byte

// tokenCache remembers the claims of tokens whose signature checked out, so
// a repeated token costs a hash and a lookup instead of an HMAC or an
// RSA/ECDSA verification. Only successes go in; the time claims are checked
// again on every hit, since the signature stays good but exp does not.
type tokenCache struct {
	lru *lru.Cache[tokenKey, *jwt.RegisteredClaims]

	// gen counts flushes. A verification reads it before it looks its key
	// up and adds its result only if no flush came in between: otherwise a
	// token checked against a key the refresh just removed could land in
	// the cache right after the flush and outlive the revocation.
	gen atomic.Uint64
	// mu orders add against flush; lookups need only the LRU's own lock.
	mu sync.Mutex
}

func newTokenCache(size int) *tokenCache {
	c, err := lru.New[tokenKey, *jwt.RegisteredClaims](size)
	if err != nil {
		// Only a size below one fails, and the caller never passes one.
		panic(err)
	}
	return &tokenCache{lru: c}
}

func keyOf(token string) tokenKey { return sha256.Sum256([]byte(token)) }

func (c *tokenCache) get(k tokenKey) (*jwt.RegisteredClaims, bool) { return c.lru.Get(k) }

func (c *tokenCache) remove(k tokenKey) { c.lru.Remove(k) }

// generation is read before a verification starts; see add.
func (c *tokenCache) generation() uint64 { return c.gen.Load() }

// add stores claims verified since generation gen, unless the cache was
// flushed meanwhile.
func (c *tokenCache) add(gen uint64, k tokenKey, claims *jwt.RegisteredClaims) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen.Load() == gen {
		c.lru.Add(k, claims)
	}
}

// flush forgets every token: a key the tokens were checked with may be gone.
func (c *tokenCache) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen.Add(1)
	c.lru.Purge()
}

func (c *tokenCache) len() int { return c.lru.Len() }

package httpapi

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/flashsale/flashsale/internal/edge"
	"github.com/flashsale/flashsale/internal/identity"
)

// Config holds the HTTP API's own settings; the services it talks to come
// from internal/config like every other process.
type Config struct {
	Addr string // HTTP_ADDR, default :8080
	// ReadTimeout bounds reading a request, headers and body
	// (HTTP_READ_TIMEOUT, default DefaultReadTimeout). A body not in by
	// then is answered 408 REQUEST_TIMEOUT.
	ReadTimeout time.Duration
	// H2C also serves HTTP/2 without TLS (HTTP_H2C=true), for a load
	// balancer or a client that speaks it with prior knowledge: many
	// requests, long polls of the queue (?wait=) above all, over few
	// connections. HTTP/1.1 is served either way.
	H2C bool
	// WebhookSecrets verify payment callbacks (WEBHOOK_SECRET, comma
	// separated). During a rotation both the new and the old secret are
	// listed; the first one is the current one, used by `starter pay
	// --via-api` to sign.
	WebhookSecrets []string
	AdminToken     string // ADMIN_TOKEN: bearer token of the operator endpoints
	// BuyRate is buy requests per second per user (BUY_RATE_PER_USER,
	// default 5), shared by every instance.
	BuyRate int
	// OrderRate is order reads and cancels per second per buyer
	// (ORDER_RATE_PER_USER, default edge.DefaultOrderRate), shared by every
	// instance.
	OrderRate int
	// MaxInFlight bounds the units of one SKU on their way through Temporal
	// from this instance (EDGE_MAX_IN_FLIGHT, default 16).
	MaxInFlight int64
	// SalePasses is this instance's share of a queued sale's passes
	// outstanding (SALE_PASSES_PER_INSTANCE, default DefaultSalePassWindows
	// x MaxInFlight): the
	// serving counter issues a pass only while the passes outstanding are
	// fewer than the live instances' shares summed (and the units left). A
	// pass is usable for its whole life, and most of that life is its holder
	// not yet having looked: more passes than the window keep placements
	// flowing while holders find theirs, at the cost of admissions straying
	// further from rank order (docs/design/fair-sale.md).
	SalePasses int64
	// AdmissionMaxInFlight caps the adaptive limit on new orders in flight
	// into Temporal from this instance (ADMISSION_MAX_IN_FLIGHT, default
	// edge.DefaultPlacementMax); see internal/edge/placement.go.
	AdmissionMaxInFlight int
	// AdmissionTargetLatency is the answer time the latency cap keeps
	// admitted placements within (ADMISSION_TARGET_LATENCY, default
	// edge.DefaultPlacementTarget, 300ms; "off" turns the cap off).
	AdmissionTargetLatency time.Duration
	// AdmissionThroughput is the new orders a second this instance's
	// Temporal completes, when measured by an operator
	// (ADMISSION_THROUGHPUT; default 0: learned from the last second).
	AdmissionThroughput float64
	// AdmissionMaxRetryAfter is the longest Retry-After a BUSY answer says
	// while this instance is saturated (ADMISSION_MAX_RETRY_AFTER, default
	// edge.DefaultBusyRetryAfterMax, 10s; 1s keeps every BUSY at one
	// second); see edge.PlacementLimit.
	AdmissionMaxRetryAfter time.Duration
	// LocalSoldOutTTL overrides the in-process sold-out cache's expiry.
	// Not read from the environment: tests raise it to prove that Pub/Sub,
	// not expiry, clears the cache.
	LocalSoldOutTTL time.Duration
	// Identity says which identity provider's buyer tokens to trust
	// (BUYER_JWT_SECRET or BUYER_JWKS_URL; see internal/identity). The
	// process builds its verifier from it (Deps.Buyers).
	Identity identity.Config
	// WaitlistPerUnit caps a SKU's waitlist at this many places per unit
	// of its stock (WAITLIST_PER_UNIT, default 3): more waiting buyers than
	// that will not see an offer this sale, and an unbounded list is a
	// place for bots to hold every released unit.
	WaitlistPerUnit int64
	// SaleControlWait is how long a sale control (open, close, ...) is
	// waited for before it is answered 202 Accepted with where to poll;
	// zero means DefaultSaleControlWait, inside the server's write
	// timeout. Tests shorten it.
	SaleControlWait time.Duration
	// Now is the clock for signature timestamps; nil means time.Now.
	Now func() time.Time
}

// DefaultWaitlistPerUnit is WaitlistPerUnit's default.
const DefaultWaitlistPerUnit int64 = 3

// DefaultReadTimeout is ReadTimeout's default: bodies are at most 64 KiB,
// so a client still sending one after this is stalled or hostile.
const DefaultReadTimeout = 15 * time.Second

// DefaultAddr is where the API listens unless HTTP_ADDR says otherwise.
const DefaultAddr = ":8080"

// minSecretLen refuses placeholder secrets ("secret", "changeme"): an HMAC
// key or bearer token that short can be guessed.
const minSecretLen = 16

// DefaultSalePassWindows is how many in-flight windows of passes an
// instance keeps out by default. A pass spends most of its life waiting
// for its holder's next look at the queue (seconds, under a crowd of
// pollers), a placement well under one: with one window of passes the
// fairness benchmark placed 164 units in 90 s, with four 734, as many as
// the race without a queue (724), with admissions still in rank order
// (Kendall's tau 0.998 on the buyers' 201s), 2026-12-03.
const DefaultSalePassWindows = 4

// LoadConfig reads the API settings. WEBHOOK_SECRET, ADMIN_TOKEN and the
// buyer token setting (BUYER_JWT_SECRET or BUYER_JWKS_URL) come only from the
// environment and have no default: the API refuses to start without them
// rather than run with a guessable one, or with buyers who are whoever they
// say they are.
func LoadConfig(getenv func(string) string) (Config, error) {
	cfg := Config{Addr: DefaultAddr, BuyRate: edge.DefaultBuyRate, OrderRate: edge.DefaultOrderRate, MaxInFlight: edge.DefaultMaxInFlight,
		WaitlistPerUnit: DefaultWaitlistPerUnit, ReadTimeout: DefaultReadTimeout}
	if v := getenv("HTTP_ADDR"); v != "" {
		cfg.Addr = v
	}
	var errs []error
	if v := getenv("HTTP_READ_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("HTTP_READ_TIMEOUT=%q: want a positive duration (15s)", v))
		}
		cfg.ReadTimeout = d
	}
	if v := getenv("HTTP_H2C"); v != "" {
		h2c, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("HTTP_H2C=%q: want true or false", v))
		}
		cfg.H2C = h2c
	}
	secrets, err := ParseSecrets(getenv("WEBHOOK_SECRET"))
	if err != nil {
		errs = append(errs, fmt.Errorf("WEBHOOK_SECRET: %w", err))
	}
	cfg.WebhookSecrets = secrets
	cfg.AdminToken = getenv("ADMIN_TOKEN")
	if len(cfg.AdminToken) < minSecretLen {
		errs = append(errs, fmt.Errorf("ADMIN_TOKEN: must be set to at least %d characters", minSecretLen))
	}
	cfg.Identity, err = identity.LoadConfig(getenv)
	if err != nil {
		errs = append(errs, err)
	}
	if v := getenv("WAITLIST_PER_UNIT"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("WAITLIST_PER_UNIT=%q: want a positive integer", v))
		}
		cfg.WaitlistPerUnit = n
	}
	if v := getenv("BUY_RATE_PER_USER"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("BUY_RATE_PER_USER=%q: want a positive integer", v))
		}
		cfg.BuyRate = n
	}
	if v := getenv("ORDER_RATE_PER_USER"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("ORDER_RATE_PER_USER=%q: want a positive integer", v))
		}
		cfg.OrderRate = n
	}
	if v := getenv("EDGE_MAX_IN_FLIGHT"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("EDGE_MAX_IN_FLIGHT=%q: want a positive integer", v))
		}
		cfg.MaxInFlight = n
	}
	if v := getenv("SALE_PASSES_PER_INSTANCE"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("SALE_PASSES_PER_INSTANCE=%q: want a positive integer", v))
		}
		cfg.SalePasses = n
	}
	if v := getenv("ADMISSION_MAX_IN_FLIGHT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("ADMISSION_MAX_IN_FLIGHT=%q: want a positive integer", v))
		}
		cfg.AdmissionMaxInFlight = n
	}
	if v := getenv("ADMISSION_TARGET_LATENCY"); v != "" {
		if v == "off" {
			cfg.AdmissionTargetLatency = -1
		} else if d, err := time.ParseDuration(v); err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("ADMISSION_TARGET_LATENCY=%q: want a positive duration (300ms) or off", v))
		} else {
			cfg.AdmissionTargetLatency = d
		}
	}
	if v := getenv("ADMISSION_THROUGHPUT"); v != "" {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || x <= 0 || math.IsInf(x, 0) || math.IsNaN(x) {
			errs = append(errs, fmt.Errorf("ADMISSION_THROUGHPUT=%q: want a positive number of orders a second", v))
		}
		cfg.AdmissionThroughput = x
	}
	if v := getenv("ADMISSION_MAX_RETRY_AFTER"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d%time.Second != 0 {
			errs = append(errs, fmt.Errorf("ADMISSION_MAX_RETRY_AFTER=%q: want whole seconds, at least 1s (10s)", v))
		}
		cfg.AdmissionMaxRetryAfter = d
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// ParseSecrets splits a comma-separated WEBHOOK_SECRET. Surrounding spaces
// are trimmed; every secret must be at least 16 characters.
func ParseSecrets(v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, errors.New("must be set (comma-separated secrets, newest first)")
	}
	var out []string
	for s := range strings.SplitSeq(v, ",") {
		s = strings.TrimSpace(s)
		if len(s) < minSecretLen {
			return nil, fmt.Errorf("every secret must be at least %d characters", minSecretLen)
		}
		out = append(out, s)
	}
	return out, nil
}

func (c Config) validate() error {
	if len(c.WebhookSecrets) == 0 {
		return errors.New("no webhook secret")
	}
	for _, s := range c.WebhookSecrets {
		if len(s) < minSecretLen {
			return fmt.Errorf("webhook secret shorter than %d characters", minSecretLen)
		}
	}
	if len(c.AdminToken) < minSecretLen {
		return fmt.Errorf("admin token shorter than %d characters", minSecretLen)
	}
	if c.ReadTimeout < 0 {
		return errors.New("negative read timeout")
	}
	if c.WaitlistPerUnit < 0 {
		return errors.New("negative waitlist places per unit")
	}
	return nil
}

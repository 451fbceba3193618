package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// NoEviction is the only maxmemory-policy a sale's Redis may have. Any
// other one lets a full Redis delete keys to make room: a bucket of stock,
// a buyer's limit count or an order's reservation marker gone mid-sale
// undersells, lets a buyer past the limit, or replays a reservation.
const NoEviction = "noeviction"

// EvictionError says why a Redis is not proven to keep every key: a node's
// policy is not noeviction, or the node refused CONFIG GET (managed Redis
// often disables CONFIG), so nothing here can tell. REDIS_ALLOW_EVICTION=true
// overrides it.
type EvictionError struct {
	// Addr is the node's host:port.
	Addr string
	// Policy is the node's maxmemory-policy; empty when Refused.
	Policy string
	// Refused is the node's answer to CONFIG GET when it would not tell.
	Refused error
}

func (e *EvictionError) Error() string {
	if e.Refused != nil {
		return fmt.Sprintf("redis %s refused CONFIG GET maxmemory-policy (%v), so its eviction policy is not proven to be %s: "+
			"set maxmemory-policy %s in its configuration (a managed Redis: its parameter group or settings), "+
			"or set REDIS_ALLOW_EVICTION=true to run anyway", e.Addr, e.Refused, NoEviction, NoEviction)
	}
	return fmt.Sprintf("redis %s has maxmemory-policy %s: a full Redis would evict stock and reservation keys mid-sale; "+
		"run CONFIG SET maxmemory-policy %s (and CONFIG REWRITE, or put it in redis.conf), "+
		"or set REDIS_ALLOW_EVICTION=true to run anyway", e.Addr, e.Policy, NoEviction)
}

// CheckEviction returns an *EvictionError (several joined, for a Cluster)
// unless every master of rdb answers maxmemory-policy noeviction; a
// replica's policy matters only once it is promoted, and is checked then by
// the next readiness probe. Any other error means Redis was not reached.
func CheckEviction(ctx context.Context, rdb redis.UniversalClient) error {
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		var errs []error
		err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			if err := checkNode(ctx, c); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("check eviction policy of the cluster's masters: %w", err)
		}
		return errors.Join(errs...)
	}
	c, ok := rdb.(*redis.Client)
	if !ok {
		return fmt.Errorf("check eviction policy: unsupported client %T", rdb)
	}
	return checkNode(ctx, c)
}

func checkNode(ctx context.Context, c *redis.Client) error {
	addr := c.Options().Addr
	policy, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
	var reply redis.Error
	switch {
	case errors.As(err, &reply):
		// The node answered, with an error: it will not tell.
		return &EvictionError{Addr: addr, Refused: err}
	case err != nil:
		return fmt.Errorf("config get maxmemory-policy on %s: %w", addr, err)
	}
	got, ok := policy["maxmemory-policy"]
	if !ok {
		// A proxy that hides CONFIG may answer an empty map.
		return &EvictionError{Addr: addr, Refused: errors.New("no maxmemory-policy in the answer")}
	}
	if !strings.EqualFold(got, NoEviction) {
		return &EvictionError{Addr: addr, Policy: got}
	}
	return nil
}

// Reason is the error without the node's address, for an answer that
// leaves the process (a readiness probe's body).
func (e *EvictionError) Reason() string {
	if e.Refused != nil {
		return "redis refused CONFIG GET maxmemory-policy, so noeviction is not proven (set it in redis.conf, or REDIS_ALLOW_EVICTION=true)"
	}
	return "redis maxmemory-policy is " + e.Policy + ", not noeviction (CONFIG SET maxmemory-policy noeviction, or REDIS_ALLOW_EVICTION=true)"
}

// EvictionReasons joins the Reason of every *EvictionError in err.
func EvictionReasons(err error) string {
	var out []string
	var walk func(error)
	walk = func(err error) {
		var e *EvictionError
		if errors.As(err, &e) && e == err {
			out = append(out, e.Reason())
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		if x := errors.Unwrap(err); x != nil {
			walk(x)
		}
	}
	walk(err)
	return strings.Join(out, "; ")
}

// GateEviction is CheckEviction with the override applied: with allow
// (REDIS_ALLOW_EVICTION=true) it logs, every time it runs, that the check is
// overridden and what it found, and returns nil; without, it returns what
// CheckEviction found. An error that is not IsEviction means Redis was not
// reached, whatever allow says.
func GateEviction(ctx context.Context, rdb redis.UniversalClient, allow bool, logger *slog.Logger) error {
	err := CheckEviction(ctx, rdb)
	if !allow || (err != nil && !IsEviction(err)) {
		return err
	}
	// Loud on purpose: an override set for a test or an incident and left
	// on is how a sale loses keys later.
	if err != nil {
		logger.WarnContext(ctx, "REDIS_ALLOW_EVICTION=true overrides the eviction check: Redis may evict sale keys", "problem", err.Error())
	} else {
		logger.WarnContext(ctx, "REDIS_ALLOW_EVICTION=true is set: the eviction check passed but is overridden; unset it")
	}
	return nil
}

// IsEviction reports whether err says Redis may evict (or would not say),
// as opposed to Redis being unreachable.
func IsEviction(err error) bool {
	var e *EvictionError
	return errors.As(err, &e)
}

// EvictionRecheck is how long a readiness probe trusts a passing eviction
// check. Probes come every few seconds from every load balancer, and each
// check is a CONFIG GET on every master; a policy changed to one that may
// evict is an operator's act, found within this period.
const EvictionRecheck = 30 * time.Second

// CachedEviction is check (Backend.CheckEviction) run at most once per
// EvictionRecheck while it passes: the last passing verdict is kept with its
// time. A failing one (a policy that may evict, Redis not reached) is not
// kept: the next probe checks again, so a fix is seen at once. now is the
// clock (time.Now; a test's own). Safe for concurrent use; probes that meet
// an expired verdict may each check.
func CachedEviction(check func(context.Context) error, now func() time.Time) func(context.Context) error {
	var mu sync.Mutex
	var passed time.Time
	return func(ctx context.Context) error {
		mu.Lock()
		fresh := !passed.IsZero() && now().Sub(passed) < EvictionRecheck
		mu.Unlock()
		if fresh {
			return nil
		}
		at := now()
		err := check(ctx)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			passed = time.Time{}
		} else if at.After(passed) {
			passed = at
		}
		return err
	}
}

// Package redisguard decides whether Redis may be used right now, so that
// callers with a slower path that does not need it (reserving in MySQL
// alone) take that path at once instead of each waiting out a timeout.
//
// It is a circuit breaker (github.com/sony/gobreaker) fed with the outcome
// of real calls: a few consecutive outage errors open it; after a cool-down
// one call is let through as a probe, and its success closes it again.
// Only outages count: a reply from Redis, even an error reply, proves it
// is up. An overload of this process's own connection pool (IsOverload)
// counts neither way.
package redisguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/flashsale/flashsale"

	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"
)

// Defaults for Options fields left zero.
const (
	// DefaultFailures opens the guard. A stopped Redis makes every call in
	// flight fail at once, so a handful is enough to tell an outage from a
	// single dropped connection.
	DefaultFailures = 3
	// DefaultCooldown is how long the guard stays open before a probe.
	DefaultCooldown = time.Second
)

// Options tune a Guard.
type Options struct {
	// Name appears in logs ("redis" if empty).
	Name     string
	Failures uint32
	Cooldown time.Duration
	Logger   *slog.Logger
}

// Guard tells whether Redis may be used. Safe for concurrent use.
type Guard struct {
	cb *gobreaker.TwoStepCircuitBreaker[struct{}]
}

// New returns a closed (Redis usable) guard.
func New(opts Options) *Guard {
	if opts.Name == "" {
		opts.Name = "redis"
	}
	if opts.Failures == 0 {
		opts.Failures = DefaultFailures
	}
	if opts.Cooldown <= 0 {
		opts.Cooldown = DefaultCooldown
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	failures := opts.Failures
	return &Guard{cb: gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        opts.Name,
		MaxRequests: 1,
		Timeout:     opts.Cooldown,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		IsSuccessful: func(err error) bool {
			return !IsOutage(err)
		},
		// A pool timeout says this process asked for more connections
		// than it holds, not that Redis is down: it must not open the
		// guard (a burst of buyers would degrade a healthy sale to MySQL).
		// Nor may it close or keep closed a guard: a hung Redis also fills
		// the pool, and there the calls holding the connections time out
		// and count while their waiters say nothing.
		IsExcluded: IsOverload,
		OnStateChange: func(name string, from, to gobreaker.State) {
			switch to {
			case gobreaker.StateOpen:
				logger.Warn("redis unreachable: degrading to mysql alone", "guard", name, "from", from.String())
			case gobreaker.StateClosed:
				logger.Info("redis reachable again", "guard", name)
			}
		},
	})}
}

// Allow asks whether Redis may be called now. When ok is false Redis is
// known to be down (or a probe is already finding out): take the path that
// does not need it. When ok is true, make the call and pass its error (nil
// on success) to done, exactly once.
func (g *Guard) Allow() (done func(error), ok bool) {
	if g == nil {
		return func(error) {}, true
	}
	done, err := g.cb.Allow()
	if err != nil {
		return func(error) {}, false
	}
	return done, true
}

// Up reports whether the guard is closed: Redis answered the last calls.
func (g *Guard) Up() bool {
	return g == nil || g.cb.State() == gobreaker.StateClosed
}

// IsOutage reports whether err means Redis could not be reached or did not
// answer in time, as opposed to an answer: redis.Nil, an error reply, or a
// business error (sold out, unknown SKU) built on one. An overload is not
// an outage.
func IsOutage(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || IsOverload(err) {
		return false
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		// A reply proves a node answered, except the replies a Redis
		// Cluster gives while it cannot serve the slot (a master lost,
		// its replica not yet promoted) or a node still loading its data.
		return unavailableReply(reply.Error())
	}
	var netErr net.Error
	switch {
	case errors.As(err, &netErr),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE):
		return true
	}
	return false
}

// IsOverload reports whether err is this process waiting too long for a
// connection of its own pool: go-redis's pool timeout (redis.ErrPoolTimeout),
// or the caller's deadline met while it waited (ErrPoolWait, marked by
// PoolWaitHook): more calls in flight than the pool holds. Redis may be
// perfectly well; the caller is told BUSY and retries, rather than taking
// the path for a Redis that is down.
func IsOverload(err error) bool {
	return errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, ErrPoolWait)
}

// ErrPoolWait marks a call whose context's deadline passed before it got a
// connection of the pool (PoolWaitHook).
var ErrPoolWait = errors.New("redis: deadline passed waiting for a pool connection")

// PoolWaitHook is the go-redis hook every client of the processes carries
// (backend.NewRedis): it marks with ErrPoolWait a call that failed on its
// context's own deadline with no network error. go-redis (without
// ContextTimeoutEnabled) reads the context only while it waits for a
// connection of the pool (and between retries); a deadline met on the wire
// is the ReadTimeout's, a net.Error, an outage. Without the mark the bare
// deadline reads as an outage, and a burst answers 503 instead of BUSY.
func PoolWaitHook() redis.Hook { return poolWaitHook{} }

type poolWaitHook struct{}

func (poolWaitHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (poolWaitHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { return markPoolWait(next(ctx, cmd)) }
}

func (poolWaitHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { return markPoolWait(next(ctx, cmds)) }
}

func markPoolWait(err error) error {
	// Not net.Error: context.DeadlineExceeded is one itself.
	var opErr *net.OpError
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &opErr) ||
		errors.Is(err, os.ErrDeadlineExceeded) || IsOverload(err) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrPoolWait, err)
}

// unavailableReply recognises the error replies that mean "no node can
// serve this now": CLUSTERDOWN and TRYAGAIN during a failover, MASTERDOWN
// from a replica cut off from its master, LOADING while a node reads its
// data back.
func unavailableReply(msg string) bool {
	for _, prefix := range []string{"CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "LOADING"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

// errBusy is the code of an overload; Retry-After comes with it at the door.
var errBusy = &flashsale.Error{Code: flashsale.Busy, Message: "too many requests in flight; retry shortly"}

// Code codes *err for the stores' callers, by the same tests the guard
// trips on: Unavailable, with the client's words unavailable, when Redis
// could not be reached or did not answer in time (IsOutage: a refused or
// timed-out dial, a dropped connection, a deadline, CLUSTERDOWN during a
// failover; never a caller's own cancellation); Busy when this process's
// pool was exhausted (IsOverload). An error already coded keeps its code.
// The cause stays wrapped: the guard, errors.Is and the logs still see the
// driver's error. Stores defer it on every exported method, so each door
// reads one code.
func Code(err *error, unavailable string) {
	if *err == nil || flashsale.ErrorCode(*err) != flashsale.Internal {
		return
	}
	switch {
	case IsOverload(*err):
		*err = fmt.Errorf("%w: %w", errBusy, *err)
	case IsOutage(*err):
		*err = fmt.Errorf("%w: %w", &flashsale.Error{Code: flashsale.Unavailable, Message: unavailable}, *err)
	}
}

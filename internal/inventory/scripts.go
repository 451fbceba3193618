package inventory

import (
	"context"
	"embed"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale/flashsale/internal/luascript"
)

// Every Lua script of the package, in one place. Each *.lua file documents
// its KEYS and ARGV; every script touches the keys of one slot only, so a
// cluster client can run it (keys.go). Scripts are embedded so the binary
// and the Lua cannot drift apart, and loaded by luascript.Load (EVALSHA,
// falling back to EVAL after a NOSCRIPT).
//
//go:embed *.lua
var luaFiles embed.FS

func script(name string) *redis.Script { return luascript.Load(luaFiles, name) }

var (
	// The buying path: a reservation, its give-back, the sold-out flag and
	// the announcement that stock came back (reserve.go, stock.go).
	takeScript    = script("take.lua")
	releaseScript = script("release.lua")
	soldOutScript = script("soldout.lua")
	bumpScript    = script("bump.lua")
	restockScript = script("restock.lua")
	driftScript   = script("drift.lua")

	// The per-buyer limit: an order's units counted before any bucket is
	// touched, and given back with them (limit.go).
	limitTakeScript = script("limit_take.lua")
	limitGiveScript = script("limit_give.lua")

	// Resizing: the count switch, the per-bucket stamps of the layout
	// epoch that guard cached layouts, both halves of a move, the lock's
	// release (resize.go, layout.go, move.go).
	layoutScript  = script("layout.lua")
	stampScript   = script("stamp.lua")
	moveOutScript = script("moveout.lua")
	moveInScript  = script("movein.lua")
	unlockScript  = script("unlock.lua")

	// The waitlist and the hand-over of a released order's units
	// (waitlist.go).
	waitlistJoinScript = script("waitlist_join.lua")
	waitlistPopScript  = script("waitlist_pop.lua")
	transferScript     = script("transfer.lua")

	// Reconciliation: relative corrections, the fence that orders them,
	// and its move past a loss (reconcile.go).
	adjustScript = script("adjust.lua")
	claimScript  = script("claim.lua")
	fenceScript  = script("fence.lua")
)

// Release modes understood by release.lua.
const (
	modeRelease = "r" // Release: the order is cancelled
	modeSoldOut = "s" // Reserve gives back a take it could not complete
)

// scriptCall is one invocation of a script inside a pipeline.
type scriptCall struct {
	keys []string
	args []any
}

// evalPipelined runs script once per call in a single pipeline (one round
// trip per node instead of one per bucket). Calls that fail with NOSCRIPT
// (script cache flushed, failover to a node that never saw the script) are
// retried once after loading the script. Only the failed calls are re-run,
// so a call that already ran is never repeated; the scripts used here are
// idempotent anyway.
func (s *Store) evalPipelined(ctx context.Context, script *redis.Script, calls []scriptCall) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, len(calls))
	pending := make([]int, len(calls))
	for i := range pending {
		pending[i] = i
	}
	for attempt := 0; ; attempt++ {
		pipe := s.rdb.Pipeline()
		for _, i := range pending {
			cmds[i] = script.EvalSha(ctx, pipe, calls[i].keys, calls[i].args...)
		}
		// Exec reports only the first failure; each command is checked below.
		_, _ = pipe.Exec(ctx)

		var missing []int
		for _, i := range pending {
			err := cmds[i].Err()
			switch {
			case err == nil:
			case attempt == 0 && redis.HasErrorPrefix(err, "NOSCRIPT"):
				missing = append(missing, i)
			default:
				return nil, err
			}
		}
		if len(missing) == 0 {
			return cmds, nil
		}
		// On a cluster client SCRIPT LOAD goes to every primary.
		if err := script.Load(ctx, s.rdb).Err(); err != nil {
			return nil, fmt.Errorf("load script after NOSCRIPT: %w", err)
		}
		pending = missing
	}
}

// LoadScripts loads the buying path's scripts into the Redis script cache,
// so a benchmark's first EVALSHA does not pay for a NOSCRIPT round trip.
func (s *Store) LoadScripts(ctx context.Context) (err error) {
	defer codeOutage(&err)
	for _, sc := range []*redis.Script{takeScript, releaseScript, soldOutScript, bumpScript, restockScript, driftScript, limitTakeScript, limitGiveScript} {
		if err := sc.Load(ctx, s.rdb).Err(); err != nil {
			return fmt.Errorf("load scripts: %w", err)
		}
	}
	return nil
}

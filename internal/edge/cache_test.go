package edge

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSoldOutCache(t *testing.T) {
	t0 := time.Now()
	tests := []struct {
		name string
		run  func(c *soldOutCache) bool // returns what set returned
		want bool
		// cached is whether "a" reads sold out afterwards, at t0+10ms.
		cached bool
	}{
		{"fresh observation is cached", func(c *soldOutCache) bool {
			return c.set("a", c.token(t0), t0)
		}, true, true},
		{"a change after the token refuses it", func(c *soldOutCache) bool {
			tok := c.token(t0)
			c.changed("a", t0)
			return c.set("a", tok, t0)
		}, false, false},
		{"a change of another sku does not", func(c *soldOutCache) bool {
			tok := c.token(t0)
			c.changed("b", t0)
			return c.set("a", tok, t0)
		}, true, true},
		{"a change before the token does not", func(c *soldOutCache) bool {
			c.changed("a", t0)
			return c.set("a", c.token(t0), t0)
		}, true, true},
		{"a reset refuses every observation in progress", func(c *soldOutCache) bool {
			tok := c.token(t0)
			c.reset()
			return c.set("a", tok, t0)
		}, false, false},
		{"an old observation is refused", func(c *soldOutCache) bool {
			return c.set("a", c.token(t0.Add(-maxObservation-time.Second)), t0)
		}, false, false},
		{"a change drops the entry", func(c *soldOutCache) bool {
			ok := c.set("a", c.token(t0), t0)
			c.changed("a", t0)
			return ok
		}, true, false},
		{"a reset drops every entry", func(c *soldOutCache) bool {
			ok := c.set("a", c.token(t0), t0)
			c.reset()
			return ok
		}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newSoldOutCache(time.Second)
			require.Equal(t, tt.want, tt.run(c))
			require.Equal(t, tt.cached, c.soldOut("a", t0.Add(10*time.Millisecond)))
		})
	}
}

func TestSoldOutCacheExpiresAndPrunes(t *testing.T) {
	t0 := time.Now()
	c := newSoldOutCache(time.Second)
	require.True(t, c.set("a", c.token(t0), t0))
	c.changed("b", t0)
	require.True(t, c.soldOut("a", t0.Add(999*time.Millisecond)))
	require.False(t, c.soldOut("a", t0.Add(time.Second)), "the TTL is the safety net for a lost message")
	require.Equal(t, 1, c.size(t0))

	c.prune(t0.Add(maxObservation + time.Second))
	require.Empty(t, c.until)
	require.Empty(t, c.lastChange)
}

func TestInflightAdmit(t *testing.T) {
	tests := []struct {
		name        string
		inFlight    int64 // units of sku "a" admitted before
		qty, units  int64
		limit       int64
		want        admission
		wantInFight int64
	}{
		{"first of plenty", 0, 1, 100, 2, admitted, 1},
		{"within window and stock", 1, 1, 100, 2, admitted, 2},
		{"window full", 2, 1, 100, 2, busy, 2},
		{"stock would be overcommitted", 3, 1, 3, 10, busy, 3},
		{"last unit, nobody in flight", 0, 1, 1, 2, admitted, 1},
		{"order larger than the window, alone", 0, 5, 10, 2, admitted, 5},
		{"more than is left, alone", 0, 3, 2, 10, tooFew, 0},
		{"more than is left, others in flight", 1, 3, 2, 10, busy, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newInflight()
			if tt.inFlight > 0 {
				require.Equal(t, admitted, f.admit("a", tt.inFlight, tt.inFlight, tt.inFlight, 0))
			}
			require.Equal(t, tt.want, f.admit("a", tt.qty, tt.units, tt.limit, 0))
			require.Equal(t, tt.wantInFight, f.total())
		})
	}
}

func TestInflightRelease(t *testing.T) {
	f := newInflight()
	require.Equal(t, admitted, f.admit("a", 1, 10, 2, 0))
	require.Equal(t, admitted, f.admit("b", 5, 10, 2, 0))
	require.Equal(t, int64(6), f.total())
	require.True(t, f.full("a", 2, 2))
	seen := f.releases("a")
	f.release("a", 1)
	require.Equal(t, stale, f.admit("a", 1, 10, 2, seen), "a unit given back after the read makes the read stale")
	require.Equal(t, admitted, f.admit("a", 1, 10, 2, f.releases("a")))
	f.release("a", 1)
	f.release("b", 5)
	require.Empty(t, f.units, "idle SKUs cost nothing")
	require.Zero(t, f.total())
}

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

func TestInflight(t *testing.T) {
	f := newInflight()
	pos, ok := f.acquire("a", 1, 2)
	require.True(t, ok)
	require.Equal(t, int64(1), pos)
	pos, ok = f.acquire("a", 1, 2)
	require.True(t, ok)
	require.Equal(t, int64(2), pos)
	_, ok = f.acquire("a", 1, 2)
	require.False(t, ok, "window full")
	pos, ok = f.acquire("b", 5, 2)
	require.True(t, ok, "an order larger than the window is admitted alone")
	require.Equal(t, int64(5), pos)
	require.Equal(t, int64(7), f.total())

	f.release("a", 1)
	f.release("a", 1)
	f.release("b", 5)
	require.Empty(t, f.units, "idle SKUs cost nothing")
	require.Zero(t, f.total())
}

//go:build integration

package inventory

import (
	"context"
	"testing"

	"github.com/flashsale/flashsale"

	"github.com/stretchr/testify/require"
)

func TestHeldByOrderCountsOnlyHeldUnitsOfThisSKU(t *testing.T) {
	ctx := context.Background()
	s, rdb := newStore(t)
	sku := newSKU(t, rdb)
	// A SKU whose id extends this one's: its keys match the same glob
	// ("fs:{sku:<sku>:b*}:order:*") and must not be counted.
	lookalike := sku + ":b1"
	t.Cleanup(func() { deleteSKUKeys(t, rdb, lookalike) })
	_, err := s.Preheat(ctx, sku, 10, 4)
	require.NoError(t, err)
	_, err = s.Preheat(ctx, lookalike, 10, 4)
	require.NoError(t, err)

	steps := []struct {
		order string
		sku   string
		qty   int64
		then  func(order string)
	}{
		{order: "held", sku: sku, qty: 3},
		{order: "released", sku: sku, qty: 2, then: func(o string) {
			_, err := s.Release(ctx, o, sku)
			require.NoError(t, err)
		}},
		{order: "other", sku: lookalike, qty: 4},
		{order: "soldout", sku: sku, qty: 100}, // gives back, leaves "s" markers
	}
	for _, st := range steps {
		_, err := s.Reserve(ctx, st.order, st.sku, st.qty)
		if st.qty == 100 {
			require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
		} else {
			require.NoError(t, err)
		}
		if st.then != nil {
			st.then(st.order)
		}
	}
	held, err := s.HeldByOrder(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"held": 3}, held)
}

func TestAdjustIsRelativeClampedAndIdempotent(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		preheat  int64
		setup    func(s *Store, sku string)
		delta    int64
		wantMove int64
		wantLeft int64
	}{
		{name: "add spreads over buckets", preheat: 10, delta: 7, wantMove: 7, wantLeft: 17},
		{name: "remove takes from several buckets", preheat: 10, delta: -9, wantMove: -9, wantLeft: 1},
		{name: "remove never goes below zero", preheat: 3, delta: -10, wantMove: -3, wantLeft: 0},
		{
			name: "add to a negative bucket first zeroes it", preheat: 8, delta: 4, wantMove: 4, wantLeft: 10,
			setup: func(s *Store, sku string) {
				// Bucket 0 holds 2 units; make it -5 (tampering): 6 usable.
				require.NoError(t, s.rdb.Set(ctx, stockKey(sku, 0), -5, 0).Err())
			},
		},
		{
			name: "a take between the read and the write keeps its effect", preheat: 8, delta: 2, wantMove: 2, wantLeft: 9,
			setup: func(s *Store, sku string) {
				_, err := s.Reserve(ctx, "buyer", sku, 1)
				require.NoError(t, err)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, rdb := newStore(t)
			sku := newSKU(t, rdb)
			_, err := s.Preheat(ctx, sku, tt.preheat, 4)
			require.NoError(t, err)
			if tt.setup != nil {
				tt.setup(s, sku)
			}
			moved, err := s.Adjust(ctx, sku, tt.delta, "fix-1")
			require.NoError(t, err)
			require.Equal(t, tt.wantMove, moved)
			// A retried activity replays, it does not move again.
			again, err := s.Adjust(ctx, sku, tt.delta, "fix-1")
			require.NoError(t, err)
			require.Equal(t, tt.wantMove, again)

			snap, err := s.Snapshot(ctx, sku)
			require.NoError(t, err)
			require.Equal(t, tt.wantLeft, snap.Units)
			require.Empty(t, snap.NegativeBuckets)
		})
	}
}

func TestAddingStockClearsTheSoldOutFlag(t *testing.T) {
	ctx := context.Background()
	s, rdb := newStore(t)
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 1, 2)
	require.NoError(t, err)
	_, err = s.Reserve(ctx, "a", sku, 1)
	require.NoError(t, err)
	_, err = s.Reserve(ctx, "b", sku, 1)
	require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.SoldOut})
	soldOut, err := s.SoldOut(ctx, sku)
	require.NoError(t, err)
	require.True(t, soldOut)

	_, err = s.Adjust(ctx, sku, 1, "fix")
	require.NoError(t, err)
	soldOut, err = s.SoldOut(ctx, sku)
	require.NoError(t, err)
	require.False(t, soldOut, "buyers must not be turned away from restored units")
}

func TestClaimCorrectionLetsOneCorrectionWin(t *testing.T) {
	ctx := context.Background()
	s, rdb := newStore(t)
	sku := newSKU(t, rdb)
	_, err := s.Preheat(ctx, sku, 5, 2)
	require.NoError(t, err)
	m, err := s.Marks(ctx, sku)
	require.NoError(t, err)

	steps := []struct {
		id    string
		fence int64
		want  bool
	}{
		{id: "run-a", fence: m.Fence, want: true},
		{id: "run-b", fence: m.Fence, want: false}, // same observation, second run
		{id: "run-a", fence: m.Fence, want: true},  // retry of the winner
		{id: "run-c", fence: m.Fence + 1, want: true},
	}
	for _, st := range steps {
		ok, err := s.ClaimCorrection(ctx, sku, st.fence, st.id)
		require.NoError(t, err)
		require.Equal(t, st.want, ok, "%s at fence %d", st.id, st.fence)
	}
	after, err := s.Marks(ctx, sku)
	require.NoError(t, err)
	require.Equal(t, m.Fence+2, after.Fence)
}

func TestRestoreNeverOverwrites(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name         string
		drop         []string // which keys to delete: "count", "buckets", "fence"
		wantRestored bool
		wantUnits    int64
	}{
		{name: "every key lost: rebuilt from available", drop: []string{"all"}, wantRestored: true, wantUnits: 9},
		{name: "count lost, buckets survived: surviving buckets kept", drop: []string{"count"}, wantRestored: true, wantUnits: 7},
		{name: "nothing lost: on sale, left alone", wantUnits: 7},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, rdb := newStore(t)
			sku := newSKU(t, rdb)
			_, err := s.Preheat(ctx, sku, 10, 4)
			require.NoError(t, err)
			_, err = s.Reserve(ctx, "buyer", sku, 3) // Redis now holds 7
			require.NoError(t, err)
			before, err := s.Marks(ctx, sku)
			require.NoError(t, err)
			for _, d := range tt.drop {
				switch d {
				case "all":
					deleteSKUKeys(t, rdb, sku)
				case "count":
					require.NoError(t, rdb.Del(ctx, bucketsKey(sku)).Err())
				}
			}

			// MySQL says 9 available (say, the buyer's order was refused).
			res, err := s.Restore(ctx, sku, 9, 4)
			require.NoError(t, err)
			require.Equal(t, tt.wantRestored, res.Restored)
			require.Equal(t, tt.wantUnits, res.Units)
			require.Equal(t, 4, res.Buckets)

			// A second restorer (retry, another run) changes nothing.
			again, err := s.Restore(ctx, sku, 5, 4)
			require.NoError(t, err)
			require.False(t, again.Restored)
			require.Equal(t, tt.wantUnits, again.Units)

			after, err := s.Marks(ctx, sku)
			require.NoError(t, err)
			if tt.wantRestored {
				require.Greater(t, after.Fence, before.Fence, "a restore must make earlier observations stale")
			} else {
				require.Equal(t, before.Fence, after.Fence)
			}
		})
	}
}

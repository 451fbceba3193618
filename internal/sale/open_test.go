//go:build integration

package sale_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/sale"
	"github.com/flashsale/flashsale/internal/testenv"
)

// The open reads the entrants and writes their ranks in chunks of 1,000:
// 12,000 entrants, a crash after ten chunks (the context cancelled) leaves
// the sale SHUFFLING with exactly 10,000 ranks written; a buyer arriving
// then is ranked after every entrant; the retry writes only the last chunk
// and every rank is the one the seed predicts, each once.
func TestOpenInChunksResumesAfterACrash(t *testing.T) {
	var units atomic.Int64
	st, sku := newSale(t, &units, time.Minute)
	ctx := t.Context()
	rdb := testenv.Redis(t)
	const n = 12000
	users := make([]string, n)
	for i := range users {
		users[i] = fmt.Sprintf("u%05d", i)
		_, err := st.Enter(ctx, sku, users[i])
		require.NoError(t, err)
	}

	crash, cancel := context.WithCancel(ctx)
	var beats []int64
	_, err := st.Open(crash, sku, func(ranked int64) {
		beats = append(beats, ranked)
		if ranked >= 10000 {
			cancel() // the worker dies after its tenth chunk
		}
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, beats, 10)
	require.Equal(t, int64(10000), beats[9])
	key := "fs:{sku:" + sku + "}:sale"
	require.Equal(t, "SHUFFLING", rdb.HGet(ctx, key, "state").Val())
	require.Equal(t, int64(10000), rdb.ZCard(ctx, key+":rank").Val())
	require.Empty(t, rdb.HGet(ctx, key, "seed").Val(), "not revealed")
	late, err := st.Enter(ctx, sku, "late")
	require.NoError(t, err)
	require.Equal(t, int64(n+1), late.Rank)

	beats = nil
	opened, err := st.Open(ctx, sku, func(ranked int64) { beats = append(beats, ranked) })
	require.NoError(t, err)
	require.Equal(t, []int64{11000, n}, beats, "the retry writes only what the crash left")
	require.Equal(t, sale.Open, opened.State)
	require.Equal(t, int64(n), opened.Entrants)
	want := sale.Ranks(opened.Seed, users)
	got := rdb.ZRangeWithScores(ctx, key+":rank", 0, -1).Val()
	require.Len(t, got, n+1, "every entrant once, and the late one")
	for i, z := range got[:n] {
		require.Equal(t, want[i], z.Member, "rank %d", i+1)
		require.Equal(t, float64(i+1), z.Score)
	}
	require.Equal(t, "late", got[n].Member)
}

// The queue takes at most the sale's max entrants, before the open and
// after it: the next is QUEUE_FULL; a buyer already in keeps the place.
func TestQueueFullAtMaxEntrants(t *testing.T) {
	ctx := t.Context()
	rdb := testenv.Redis(t)
	sku := "cap-" + testenv.UniqueID(t)
	t.Cleanup(func() {
		for _, k := range rdb.Keys(context.Background(), "fs:{sku:"+sku+"}*").Val() {
			_ = rdb.Unlink(context.Background(), k).Err()
		}
	})
	st := sale.New(rdb, func(context.Context, string) (int64, error) { return 1, nil }).WithSeeds(&memSeeds{})
	_, err := st.Prepare(ctx, sku, "run-cap", time.Now().Add(time.Hour), time.Minute, 3)
	require.NoError(t, err)
	for i := range 5 {
		_, err := st.Enter(ctx, sku, "u"+strconv.Itoa(i))
		if i < 3 {
			require.NoError(t, err)
			continue
		}
		var fe *flashsale.Error
		require.True(t, errors.As(err, &fe), "%v", err)
		require.Equal(t, flashsale.QueueFull, fe.Code)
	}
	tk, err := st.Enter(ctx, sku, "u1")
	require.NoError(t, err, "in already")
	require.Equal(t, int64(2), tk.Ticket)
	_, err = st.Open(ctx, sku, nil)
	require.NoError(t, err)
	_, err = st.Enter(ctx, sku, "after")
	require.Equal(t, flashsale.QueueFull, flashsale.ErrorCode(err), "the cap counts everyone in the queue")
}

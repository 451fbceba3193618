package edge

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
)

// The queue's slots: exactly QueueInFlight requests hold one at once; the
// next waits for a slot given back rather than being refused, and one that
// waits past its patience (QueuePatience, or a long poll's longer one) is
// BUSY with a Retry-After. No Redis is asked.
func TestQueueSlots(t *testing.T) {
	g := New(nil, nil, Options{QueueInFlight: 3, QueuePatience: 50 * time.Millisecond})
	ctx := t.Context()
	var held []func()
	for range 3 {
		release, err := g.AdmitQueue(ctx, 0)
		require.NoError(t, err)
		held = append(held, release)
	}

	start := time.Now()
	_, err := g.AdmitQueue(ctx, 0)
	require.Equal(t, flashsale.Busy, flashsale.ErrorCode(err))
	var retry *RetryError
	require.True(t, errors.As(err, &retry))
	require.Positive(t, retry.After)
	require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "it waited its patience first")
	require.EqualValues(t, 1, g.Stats().Busy)
	// A long poll waits the patience it asks for, longer than the default.
	start = time.Now()
	_, err = g.AdmitQueue(ctx, 150*time.Millisecond)
	require.Equal(t, flashsale.Busy, flashsale.ErrorCode(err))
	require.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)

	// A slot given back while one waits goes to the waiter.
	got := make(chan error, 1)
	go func() {
		release, err := g.AdmitQueue(ctx, 0)
		if err == nil {
			release()
		}
		got <- err
	}()
	time.Sleep(10 * time.Millisecond)
	held[0]()
	require.NoError(t, <-got)

	// A waiter whose request ends is told so, not BUSY.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	held = held[1:]
	release, err := g.AdmitQueue(ctx, 0)
	require.NoError(t, err)
	held = append(held, release)
	_, err = g.AdmitQueue(gone, 0)
	require.ErrorIs(t, err, context.Canceled)

	// 40 at once through 3 slots, each holding its slot a moment: never
	// more than 3 in, and all 40 get in within their patience.
	for _, release := range held {
		release()
	}
	g = New(nil, nil, Options{QueueInFlight: 3, QueuePatience: 10 * time.Second})
	var mu sync.Mutex
	var in, most, admitted int
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			release, err := g.AdmitQueue(ctx, 0)
			if err != nil {
				return
			}
			mu.Lock()
			in++
			most = max(most, in)
			admitted++
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			in--
			mu.Unlock()
			release()
		})
	}
	wg.Wait()
	require.Equal(t, 40, admitted)
	require.Equal(t, 3, most)
}

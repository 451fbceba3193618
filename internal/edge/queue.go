package edge

import (
	"context"
	"fmt"
	"time"
)

// Queue requests (a fair sale's entries and looks, internal/queueing) ask
// Redis a few short calls each and no workflow, so no window of units
// bounds them: over HTTP/1.1 the clients' connections did. Over HTTP/2 a
// crowd's requests all reach the instance at once (10,000 buyers held over
// a few dozen connections), and each queued for this process's Redis pool
// call after call: the pool's waiters, the buys of the pass holders and
// the sale's own watcher among them, met its timeout, and the crowd's
// retries came back to the same queue. So the queue's requests take a slot
// of their own before they ask Redis, and wait for it here, where waiting
// costs nothing, instead of in the pool, where it holds up everyone else.

// DefaultQueueInFlight is how many queue requests of an instance ask
// Redis at once: half its Redis pool (128, internal/backend), the other
// half for the buys (a pass holder's above all), the sales' watchers and
// the stock-change listener. A look holds one connection at a time and
// answers in a few milliseconds, so 64 are thousands of looks a second.
const DefaultQueueInFlight = 64

// DefaultQueuePatience is how long a queue request waits for a slot before
// it is answered BUSY: the Redis pool's own timeout, which the same
// requests met before they had slots.
const DefaultQueuePatience = time.Second

// queueSlots is the semaphore of the queue's requests in flight.
type queueSlots chan struct{}

// AdmitQueue takes one of this instance's slots for a queue request
// (Options.QueueInFlight), waiting for one up to patience (at least
// Options.QueuePatience) or until ctx ends: BUSY (a *RetryError) when none
// came. A long poll's client said how long it would wait, and waiting here
// costs less than coming back; anyone else waits the default. release
// gives the slot back once the request is done with Redis: a long poll
// gives it back before it is held (a held look asks nothing of Redis).
func (g *Gate) AdmitQueue(ctx context.Context, patience time.Duration) (release func(), err error) {
	select {
	case g.queue <- struct{}{}:
		return func() { <-g.queue }, nil
	default:
	}
	t := time.NewTimer(max(patience, g.opts.QueuePatience))
	defer t.Stop()
	select {
	case g.queue <- struct{}{}:
		return func() { <-g.queue }, nil
	case <-t.C:
		return nil, g.overloaded(fmt.Errorf("%d queue requests asking redis", cap(g.queue)))
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

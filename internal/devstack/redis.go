package devstack

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
)

// ttlTick is how often the embedded Redis ages its TTLs. The project's TTLs
// are seconds (sold-out flag) to hours (order markers), so a quarter second
// of slack changes nothing, while each tick costs a sorted walk of every key.
const ttlTick = 250 * time.Millisecond

// Redis is an embedded Redis server (miniredis) on a free loopback port.
type Redis struct {
	mr       *miniredis.Miniredis
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// StartRedis starts an empty embedded Redis. Stop it when done.
//
// miniredis runs the project's Lua scripts with gopher-lua and serves
// EVALSHA, SCRIPT LOAD and Pub/Sub; the tests in this package exercise every
// command those scripts use.
func StartRedis() (*Redis, error) {
	mr := miniredis.NewMiniRedis()
	if err := mr.StartAddr(hostPort(0)); err != nil {
		return nil, fmt.Errorf("start embedded redis: %w", err)
	}
	// Before anyone knows the address, so no client asks first.
	if err := answerConfigGet(mr); err != nil {
		mr.Close()
		return nil, err
	}
	r := &Redis{mr: mr, stop: make(chan struct{}), done: make(chan struct{})}
	go r.ageTTLs()
	return r, nil
}

// answerConfigGet teaches miniredis CONFIG GET maxmemory-policy, which it
// lacks: every process checks the policy at start (backend.CheckEviction)
// and refuses a Redis that will not say. miniredis has no maxmemory and
// never evicts, so noeviction is the truth; any other parameter answers an
// empty map, as Redis does for one it does not know.
func answerConfigGet(mr *miniredis.Miniredis) error {
	err := mr.Server().Register("CONFIG", func(c *server.Peer, _ string, args []string) {
		if len(args) != 2 || !strings.EqualFold(args[0], "GET") {
			c.WriteError("ERR the embedded Redis answers only CONFIG GET <parameter>")
			return
		}
		if !strings.EqualFold(args[1], "maxmemory-policy") {
			c.WriteMapLen(0)
			return
		}
		c.WriteMapLen(1)
		c.WriteBulk("maxmemory-policy")
		c.WriteBulk("noeviction")
	})
	if err != nil {
		return fmt.Errorf("embedded redis: register CONFIG: %w", err)
	}
	return nil
}

// ageTTLs makes keys expire in real time. miniredis never expires keys by
// itself (it is built for tests that move time with FastForward), but the
// inventory relies on expiry: a sold-out flag set by mistake must vanish
// after its TTL, or buyers would be turned away while stock exists.
// miniredis's ClockTTL mode would do this too, but it walks and sorts every
// key on every command, which a flash sale's thousands of order markers make
// slow; one walk per tick is cheap.
func (r *Redis) ageTTLs() {
	defer close(r.done)
	t := time.NewTicker(ttlTick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-r.stop:
			return
		case now := <-t.C:
			r.mr.FastForward(now.Sub(last))
			last = now
		}
	}
}

// Addr is the host:port to give go-redis (REDIS_ADDR).
func (r *Redis) Addr() string { return r.mr.Addr() }

// Stop closes the server and every client connection. It is safe to call
// more than once.
func (r *Redis) Stop() {
	r.stopOnce.Do(func() {
		close(r.stop)
		<-r.done
		r.mr.Close()
	})
}

//go:build faults

package faults

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/flashsale/flashsale/internal/testenv"
)

// proc is a child process the suite may kill -9.
type proc struct {
	name string
	cmd  *exec.Cmd
	logs *testenv.Buffer
	done chan struct{}
}

// spawner forks every child from one OS thread that lives as long as the
// test process. Linux's parent-death signal fires when the thread that
// forked the child ends, not the process: a child forked on a thread that
// devstack later locks and retires (it does when a Temporal dev server
// stops) would be killed with it. This one thread never ends.
var spawner = sync.OnceValue(func() chan<- spawnCall {
	calls := make(chan spawnCall)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread must not end
		for c := range calls {
			c.done <- c.cmd.Start()
		}
	}()
	return calls
})

type spawnCall struct {
	cmd  *exec.Cmd
	done chan error
}

// startProc starts a child that dies with the test process (Pdeathsig), so
// a crashed suite leaves no worker or server behind.
func startProc(name string, env []string, logs *testenv.Buffer, path string, args ...string) (*proc, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	done := make(chan error, 1)
	spawner() <- spawnCall{cmd: cmd, done: done}
	if err := <-done; err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, logs: logs, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill9 is the fault: SIGKILL, no chance to finish anything.
func (p *proc) kill9() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop ends the process gracefully, or by force after grace.
func (p *proc) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.kill9()
	}
}

// freePort asks the kernel for a free loopback port.
// waitFor polls cond until it holds or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// redisServer is a private redis-server: the shared one must never be
// flushed or restarted.
type redisServer struct {
	t    *testing.T
	port int
	logs *testenv.Buffer
	p    *proc
}

func startRedis(t *testing.T) *redisServer {
	t.Helper()
	r := &redisServer{t: t, port: testenv.FreePort(t), logs: &testenv.Buffer{}}
	r.start()
	t.Cleanup(func() {
		r.p.kill9()
		if t.Failed() {
			t.Logf("redis log:\n%s", r.logs.Tail(30))
		}
	})
	return r
}

func (r *redisServer) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// start runs redis-server with no persistence: a restart comes back empty,
// like a failover to a replica that lost the writes.
func (r *redisServer) start() {
	r.t.Helper()
	p, err := startProc("redis", os.Environ(), r.logs, "redis-server",
		"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", r.t.TempDir())
	if err != nil {
		r.t.Fatal(err)
	}
	r.p = p
	rdb := redis.NewClient(&redis.Options{Addr: r.addr()})
	defer rdb.Close()
	if !waitFor(context.Background(), 10*time.Second, func() bool { return rdb.Ping(context.Background()).Err() == nil }) {
		r.t.Fatalf("private redis on %s did not start:\n%s", r.addr(), r.logs.Tail(20))
	}
}

// restartEmpty kills redis and starts an empty one on the same port.
func (r *redisServer) restartEmpty(down time.Duration) {
	r.p.kill9()
	time.Sleep(down)
	r.start()
}

// freeze makes redis unreachable for d without losing anything: SIGSTOP
// leaves its port open and its connections established, but nothing
// answers (the worst kind of outage: every call waits for its timeout),
// then SIGCONT resumes it with its data intact.
func (r *redisServer) freeze(d time.Duration) {
	r.t.Helper()
	if err := r.p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		r.t.Fatalf("stop redis: %v", err)
	}
	time.Sleep(d)
	if err := r.p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		r.t.Fatalf("resume redis: %v", err)
	}
}

// scriptFlush drops every cached Lua script: the next EVALSHA answers
// NOSCRIPT.
func (r *redisServer) scriptFlush(ctx context.Context) error {
	rdb := redis.NewClient(&redis.Options{Addr: r.addr()})
	defer rdb.Close()
	return rdb.ScriptFlush(ctx).Err()
}

// mariaServer is a private mariadbd with its own datadir, so it can be
// killed and restarted without touching the shared server.
type mariaServer struct {
	t       *testing.T
	port    int
	datadir string
	sock    string
	logs    *testenv.Buffer
	p       *proc
}

func startMaria(t *testing.T) *mariaServer {
	t.Helper()
	dir, err := os.MkdirTemp("", "faults-maria-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	m := &mariaServer{t: t, port: testenv.FreePort(t), datadir: filepath.Join(dir, "data"), sock: filepath.Join(dir, "sock"), logs: &testenv.Buffer{}}
	// --no-defaults: the system my.cnf sets a user and paths for the
	// shared server.
	out, err := exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+m.datadir,
		"--auth-root-authentication-method=normal", "--user=root", "--skip-test-db").CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	m.start()
	t.Cleanup(func() {
		m.p.stop(20 * time.Second)
		if t.Failed() {
			t.Logf("mariadb log:\n%s", m.logs.Tail(30))
		}
	})
	return m
}

func (m *mariaServer) start() {
	m.t.Helper()
	p, err := startProc("mariadbd", os.Environ(), m.logs, "mariadbd", "--no-defaults",
		"--datadir="+m.datadir, "--port="+strconv.Itoa(m.port), "--bind-address=127.0.0.1",
		"--socket="+m.sock, "--user=root", "--skip-grant-tables", "--skip-log-bin",
		"--pid-file="+filepath.Join(filepath.Dir(m.datadir), "pid"), "--innodb-buffer-pool-size=64M",
		"--max-connections=500")
	if err != nil {
		m.t.Fatal(err)
	}
	m.p = p
	db, err := sql.Open("mysql", m.dsn(""))
	if err != nil {
		m.t.Fatal(err)
	}
	defer db.Close()
	if !waitFor(context.Background(), 60*time.Second, func() bool { return db.Ping() == nil }) {
		m.t.Fatalf("private mariadb on %d did not start:\n%s", m.port, m.logs.Tail(20))
	}
}

func (m *mariaServer) dsn(dbName string) string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName, cfg.ParseTime = "root", "tcp", "127.0.0.1:"+strconv.Itoa(m.port), dbName, true
	return cfg.FormatDSN()
}

// restart kills mariadbd (crash recovery on start) and starts it again.
func (m *mariaServer) restart(down time.Duration) {
	m.p.kill9()
	time.Sleep(down)
	m.start()
}

// freshDatabase creates an empty database on the server behind serverDSN
// and drops it when the test ends (unless it failed: then it is kept for a
// look).
func freshDatabase(t *testing.T, serverDSN, name string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(serverDSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName = ""
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE `" + name + "`"); err != nil {
		t.Fatalf("create database on %s: %v", cfg.Addr, err)
	}
	admin := cfg.FormatDSN()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("database %s kept for inspection", name)
			return
		}
		if db, err := sql.Open("mysql", admin); err == nil {
			_, _ = db.Exec("DROP DATABASE IF EXISTS `" + name + "`")
			_ = db.Close()
		}
	})
	cfg.DBName = name
	cfg.ParseTime = true
	return cfg.FormatDSN()
}

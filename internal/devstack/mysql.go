package devstack

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MySQLDatabase is the database StartMySQL creates, empty: the same name
// as in the default MYSQL_DSN, so the store's migrations create the schema
// exactly as they do on a fresh MariaDB.
const MySQLDatabase = "flashsale"

// lockWaitTimeout bounds how long a statement waits for another
// connection's transaction, like InnoDB's innodb_lock_wait_timeout (50 s by
// default): a client that opened a transaction and hung must not stall the
// demo forever without an error.
const lockWaitTimeout = 50 * time.Second

// mysqlReadyTimeout bounds the wait for the server's address once it runs;
// it listens within milliseconds.
const mysqlReadyTimeout = 30 * time.Second

// MySQLOptions configures StartMySQL.
type MySQLOptions struct {
	// LockWait is how long a statement waits for another connection's
	// transaction before MySQL's lock wait timeout (1205); 0 means 50 s,
	// InnoDB's default.
	LockWait time.Duration
	// Progress receives the server's build on first use. Nil discards it.
	Progress io.Writer
}

// MySQL is a MySQL-compatible server run as a child process (package
// mysqld: go-mysql-server with its in-memory storage), listening on a free
// loopback port. Everything is lost on Stop.
//
// It runs in a process of its own so that nothing else links
// go-mysql-server: its regex package compiles ICU from WebAssembly in its
// init, about a second of CPU in every process that links it, which every
// starter command paid while the demo linked the server in (mysqld/main.go).
//
// The in-memory storage has no concurrency control of its own, so the
// server runs transactions one at a time (mysqld/serial.go), which makes
// every isolation level the store asks for hold trivially.
//
// It is sized for a demo, not a benchmark: every write statement re-sorts
// the whole table and its indexes, and lookups by secondary key scan, so
// an order (create, then pay or expire) costs about 10 ms of one core while
// the tables hold a few hundred orders, and proportionally more as they
// grow (measured on 2 cores: 250 orders in 2.8 s at the start, the sixth
// 250 in 15.7 s).
type MySQL struct {
	child
	addr string
	// stdin is the server's stdin, held open while it runs: the server
	// stops when it closes, so it dies with this process even where there
	// is no parent-death signal.
	stdin io.Closer
}

// StartMySQL builds the server if needed (mysqldBinary), starts it with an
// empty MySQLDatabase and waits until it answers a query. Stop it when done.
// ctx bounds the build and the start, not the server's lifetime.
func StartMySQL(ctx context.Context, opts MySQLOptions) (*MySQL, error) {
	w := opts.Progress
	if w == nil {
		w = io.Discard
	}
	lockWait := opts.LockWait
	if lockWait <= 0 {
		lockWait = lockWaitTimeout
	}
	bin, err := mysqldBinary(ctx, w)
	if err != nil {
		return nil, fmt.Errorf("start embedded mysql: %w", err)
	}
	logFile, err := os.CreateTemp("", "flashsale-mysql-*.log")
	if err != nil {
		return nil, fmt.Errorf("start embedded mysql: log file: %w", err)
	}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start embedded mysql: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_ = logFile.Close()
		_, _ = stdinR.Close(), stdinW.Close()
		return nil, fmt.Errorf("start embedded mysql: %w", err)
	}
	cmd := exec.Command(bin, "--addr", hostPort(0), "--lock-wait", lockWait.String())
	cmd.Stdin, cmd.Stdout = stdinR, outW
	m := &MySQL{child: newChild("mysql", cmd, logFile.Name(), logFile), stdin: stdinW}
	err = m.spawn()
	// The child holds its own copies of these ends now.
	_, _ = stdinR.Close(), outW.Close()
	if err != nil {
		_, _ = stdinW.Close(), outR.Close()
		_ = logFile.Close()
		return nil, fmt.Errorf("start embedded mysql: %w", err)
	}
	if m.addr, err = m.waitListening(ctx, outR); err == nil {
		err = m.ping(ctx)
	}
	if err != nil {
		_ = m.child.stop(false)
		_ = m.stdin.Close()
		return nil, fmt.Errorf("start embedded mysql: %w\n%s", err, m.logTail())
	}
	return m, nil
}

// waitListening reads the server's "listening <addr>" line.
func (m *MySQL) waitListening(ctx context.Context, out *os.File) (string, error) {
	line := make(chan string, 1)
	go func() {
		// Only read from: a failed close loses nothing.
		defer func() { _ = out.Close() }()
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
		// Nothing more is written to stdout; the read end closes here.
	}()
	timer := time.NewTimer(mysqlReadyTimeout)
	defer timer.Stop()
	select {
	case s := <-line:
		addr, ok := strings.CutPrefix(strings.TrimSpace(s), "listening ")
		if !ok {
			<-m.exited
			return "", fmt.Errorf("server exited before listening: %v", m.waitErr)
		}
		return addr, nil
	case <-ctx.Done():
		return "", ctx.Err()
	case <-timer.C:
		return "", fmt.Errorf("server did not listen within %s", mysqlReadyTimeout)
	}
}

// ping connects with the same driver the store uses, so a failure here is
// reported before the store's own (less specific) one.
func (m *MySQL) ping(ctx context.Context) error {
	db, err := sql.Open("mysql", m.DSN())
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer db.Close()
	var one int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("first query: %w", err)
	}
	return nil
}

// Addr is the server's host:port.
func (m *MySQL) Addr() string { return m.addr }

// DSN is a go-sql-driver DSN in the form of MYSQL_DSN: user root without a
// password (the server checks no credentials), database MySQLDatabase.
func (m *MySQL) DSN() string {
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "tcp"
	cfg.Addr = m.addr
	cfg.DBName = MySQLDatabase
	cfg.ParseTime = true
	return cfg.FormatDSN()
}

// Stop ends the server process (SIGTERM, SIGKILL after stopGrace) and
// waits for it. Clients' open connections fail on their next use. The log
// is removed unless the server had died by itself. It is safe to call more
// than once.
func (m *MySQL) Stop() error {
	err := m.stop(true)
	_ = m.stdin.Close()
	if err != nil {
		return fmt.Errorf("stop embedded mysql: %w", err)
	}
	return nil
}

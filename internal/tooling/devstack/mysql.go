package devstack

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/server"
	gms "github.com/dolthub/go-mysql-server/sql"
	"github.com/go-sql-driver/mysql"
	"github.com/sirupsen/logrus"
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

// MySQL is an in-process MySQL-compatible server: go-mysql-server with its
// in-memory storage, listening on a free loopback port. Everything is lost
// on Stop.
//
// The in-memory storage has no concurrency control of its own (a
// transaction copies the tables it touches and writes them all back at
// COMMIT, so two concurrent transactions silently overwrite each other, and
// FOR UPDATE locks nothing). StartMySQL therefore runs transactions one at a
// time (see serialHandler), which makes every isolation level the store asks
// for hold trivially: each transaction sees every earlier commit and nothing
// runs beside it.
//
// It is sized for a demo, not a benchmark: every write statement re-sorts
// the whole table and its indexes, and lookups by secondary key scan, so
// an order (create, then pay or expire) costs about 10 ms of one core while
// the tables hold a few hundred orders, and proportionally more as they
// grow (measured on 2 cores: 250 orders in 2.8 s at the start, the sixth
// 250 in 15.7 s).
type MySQL struct {
	engine   *sqle.Engine
	srv      *server.Server
	addr     string
	served   chan struct{}
	stopOnce sync.Once
}

// StartMySQL starts the server with an empty MySQLDatabase and waits until
// it answers a query. Stop it when done.
func StartMySQL(ctx context.Context) (*MySQL, error) {
	return startMySQL(ctx, lockWaitTimeout)
}

// startMySQL is StartMySQL with the lock wait timeout as a parameter, so a
// test can see it expire.
func startMySQL(ctx context.Context, lockWait time.Duration) (*MySQL, error) {
	quietGMSLogs()

	db := memory.NewDatabase(MySQLDatabase)
	// Point reads by primary key then use the key instead of scanning.
	db.EnablePrimaryKeyIndexes()
	provider := memory.NewDBProvider(db)
	engine := sqle.NewDefault(provider)

	ln, err := net.Listen("tcp", hostPort(0))
	if err != nil {
		return nil, fmt.Errorf("start embedded mysql: listen: %w", err)
	}
	h := newSerialHandler(lockWait)
	cfg := server.Config{Protocol: "tcp", Address: ln.Addr().String(), Listener: ln}
	srv, err := server.NewServerWithHandler(cfg, engine, gms.NewContext,
		h.sessionBuilder(memory.NewSessionBuilder(provider)), nil, h.wrap)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("start embedded mysql: %w", err)
	}
	m := &MySQL{engine: engine, srv: srv, addr: ln.Addr().String(), served: make(chan struct{})}
	go func() {
		defer close(m.served)
		// Start blocks in the accept loop until the listener is closed; it
		// has no other way to fail once the listener exists.
		_ = srv.Start()
	}()

	if err := m.ping(ctx); err != nil {
		_ = m.Stop()
		return nil, fmt.Errorf("start embedded mysql: %w", err)
	}
	return m, nil
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

// quietGMSLogs turns go-mysql-server's logging (the process-wide logrus
// logger, which nothing else in the project uses) down to errors. At its
// default level it logs every connection and, as warnings, every failed
// statement; the store provokes some on purpose (a duplicate key tells it a
// concurrent attempt won), which would bury the demo's output.
func quietGMSLogs() {
	if logrus.GetLevel() > logrus.ErrorLevel {
		logrus.SetLevel(logrus.ErrorLevel)
	}
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

// Stop closes the listener and ends the queries still running. Clients'
// open connections fail on their next use. It is safe to call more than
// once.
func (m *MySQL) Stop() error {
	var err error
	m.stopOnce.Do(func() {
		err = m.srv.Close()
		<-m.served
		// The engine cancels its background threads' context on the way
		// out and reports that as its error; that is the shutdown working.
		if cerr := m.engine.Close(); !errors.Is(cerr, context.Canceled) {
			err = errors.Join(err, cerr)
		}
	})
	if err != nil {
		return fmt.Errorf("stop embedded mysql: %w", err)
	}
	return nil
}

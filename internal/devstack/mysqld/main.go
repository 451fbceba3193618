// Command mysqld is the demo's MySQL-compatible store: go-mysql-server with
// its in-memory storage, run one transaction at a time (serial.go), on a
// loopback port. devstack.StartMySQL builds it on first use and runs it as a
// child process, as it runs the Temporal dev server.
//
// It is a process of its own, not a library the demo links, because
// go-mysql-server brings github.com/dolthub/go-icu-regex, whose package
// init compiles ICU from WebAssembly: about a second of CPU in every process
// that links it, before main runs. Linked into the starter, every command
// (--help, stock, order) paid it; now only this process does.
//
//	mysqld [--addr 127.0.0.1:0] [--lock-wait 50s]
//
// Once it accepts connections it prints "listening <host:port>" on stdout.
// It stops on SIGTERM or SIGINT, or when its stdin closes (the parent that
// started it is gone, on systems without a parent-death signal).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/server"
	gms "github.com/dolthub/go-mysql-server/sql"
	"github.com/sirupsen/logrus"
)

// database is created empty: the same name as in the default MYSQL_DSN
// (devstack.MySQLDatabase), so the store's migrations create the schema
// exactly as they do on a fresh MariaDB.
const database = "flashsale"

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	// Like InnoDB's innodb_lock_wait_timeout (50 s by default): a client
	// that opened a transaction and hung must not stall the demo forever
	// without an error.
	lockWait := flag.Duration("lock-wait", 50*time.Second, "how long a statement waits for another connection's transaction")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		// EOF or an error: either way nobody is left to use the server.
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	if err := serve(ctx, *addr, *lockWait, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mysqld:", err)
		os.Exit(1)
	}
}

// serve listens on addr, announces the address on ready, and serves until
// ctx ends.
func serve(ctx context.Context, addr string, lockWait time.Duration, ready io.Writer) error {
	quietGMSLogs()

	db := memory.NewDatabase(database)
	// Point reads by primary key then use the key instead of scanning.
	db.EnablePrimaryKeyIndexes()
	provider := memory.NewDBProvider(db)
	engine := sqle.NewDefault(provider)

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	h := newSerialHandler(lockWait)
	cfg := server.Config{Protocol: "tcp", Address: ln.Addr().String(), Listener: ln}
	srv, err := server.NewServerWithHandler(cfg, engine, gms.NewContext,
		h.sessionBuilder(memory.NewSessionBuilder(provider)), nil, h.wrap)
	if err != nil {
		_ = ln.Close()
		return err
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		// Start blocks in the accept loop until the listener is closed; it
		// has no other way to fail once the listener exists.
		_ = srv.Start()
	}()
	if _, err := fmt.Fprintf(ready, "listening %s\n", ln.Addr()); err != nil {
		return err
	}

	<-ctx.Done()
	err = srv.Close()
	<-served
	// The engine cancels its background threads' context on the way out
	// and reports that as its error; that is the shutdown working.
	if cerr := engine.Close(); !errors.Is(cerr, context.Canceled) {
		err = errors.Join(err, cerr)
	}
	return err
}

// quietGMSLogs turns go-mysql-server's logging (the process-wide logrus
// logger) down to errors. At its default level it logs every connection
// and, as warnings, every failed statement; the store provokes some on
// purpose (a duplicate key tells it a concurrent attempt won), which would
// bury anything worth reading in the log.
func quietGMSLogs() {
	if logrus.GetLevel() > logrus.ErrorLevel {
		logrus.SetLevel(logrus.ErrorLevel)
	}
}

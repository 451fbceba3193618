package main

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/server"
	gms "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
)

// serialHandler wraps go-mysql-server's protocol handler so that at most one
// connection at a time touches table data, and a connection inside a
// transaction keeps that right until COMMIT or ROLLBACK.
//
// Why: the in-memory storage is not safe for concurrent use. Each session
// copies the tables its transaction touches and COMMIT writes every one of
// them back whole, so with two transactions in flight the second commit
// erases the first (lost orders, lost journal rows, stock that never
// decreased), and SELECT ... FOR UPDATE or a conditional UPDATE's row lock
// guard nothing. Holding one token per transaction turns the server into a
// serial executor: slower than InnoDB's row locks, but every guard in
// internal/orderdb holds exactly as it does on MariaDB, which for a demo on
// one machine is what matters.
//
// A statement outside a transaction holds the token only while it runs.
// When such a statement fails, go-mysql-server leaves its implicit
// transaction open, holding the session's copies of the tables it touched;
// the session's next statement would reuse it and commit those stale copies
// over whatever other connections committed in between. serialHandler rolls
// it back instead, as MySQL undoes a failed autocommit statement.
type serialHandler struct {
	mysql.Handler

	token chan struct{} // holds one value while a connection has the token
	wait  time.Duration // how long to wait for the token: lock wait timeout

	mu       sync.Mutex
	sessions map[uint32]*memory.Session // by connection id
	holders  map[uint32]bool            // connections holding the token
}

func newSerialHandler(wait time.Duration) *serialHandler {
	return &serialHandler{
		token:    make(chan struct{}, 1),
		wait:     wait,
		sessions: map[uint32]*memory.Session{},
		holders:  map[uint32]bool{},
	}
}

// wrap is a server.HandlerWrapper.
func (h *serialHandler) wrap(inner mysql.Handler) (mysql.Handler, error) {
	h.Handler = inner
	return h, nil
}

// sessionBuilder records each connection's session, which is where
// go-mysql-server keeps the connection's transaction state.
func (h *serialHandler) sessionBuilder(inner server.SessionBuilder) server.SessionBuilder {
	return func(ctx context.Context, c *mysql.Conn, addr string) (gms.Session, error) {
		s, err := inner(ctx, c, addr)
		if err != nil {
			return nil, err
		}
		if ms, ok := s.(*memory.Session); ok {
			h.mu.Lock()
			h.sessions[c.ConnectionID] = ms
			h.mu.Unlock()
		}
		return s, nil
	}
}

// ComQuery implements mysql.Handler.
func (h *serialHandler) ComQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) error {
	query = rewriteDo(query)
	return h.serve(ctx, c, query, func() error { return h.Handler.ComQuery(ctx, c, query, callback) })
}

// ComMultiQuery implements mysql.Handler. It is called once per statement
// of a multi-statement query, so each statement takes the token on its own.
func (h *serialHandler) ComMultiQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) (string, error) {
	query = rewriteDo(query)
	var rest string
	err := h.serve(ctx, c, query, func() error {
		var err error
		rest, err = h.Handler.ComMultiQuery(ctx, c, query, callback)
		return err
	})
	return rest, err
}

// ComPrepare implements mysql.Handler. Preparing analyses the statement
// against the tables, so it takes the token too.
func (h *serialHandler) ComPrepare(ctx context.Context, c *mysql.Conn, query string, prepare *mysql.PrepareData) ([]*querypb.Field, error) {
	query = rewriteDo(query)
	var fields []*querypb.Field
	err := h.serve(ctx, c, query, func() error {
		var err error
		fields, err = h.Handler.ComPrepare(ctx, c, query, prepare)
		return err
	})
	return fields, err
}

// ComStmtExecute implements mysql.Handler.
func (h *serialHandler) ComStmtExecute(ctx context.Context, c *mysql.Conn, prepare *mysql.PrepareData, callback func(*sqltypes.Result) error) error {
	return h.serve(ctx, c, prepare.PrepareStmt, func() error { return h.Handler.ComStmtExecute(ctx, c, prepare, callback) })
}

// ComResetConnection implements mysql.Handler: the reset discards the
// session, and with it any open transaction, so the token goes too.
func (h *serialHandler) ComResetConnection(c *mysql.Conn) error {
	err := h.Handler.ComResetConnection(c)
	h.drop(c.ConnectionID, false)
	return err
}

// ConnectionClosed implements mysql.Handler. A client that disconnects in
// the middle of a transaction loses it (its session is discarded without a
// commit), exactly as on MySQL, and gives the token back.
func (h *serialHandler) ConnectionClosed(c *mysql.Conn) {
	h.Handler.ConnectionClosed(c)
	h.drop(c.ConnectionID, true)
}

// serve runs one statement of connection c under the token. Should the
// inner handler panic, vitess recovers, closes the connection and calls
// ConnectionClosed, whose drop gives the token back.
func (h *serialHandler) serve(ctx context.Context, c *mysql.Conn, query string, run func() error) error {
	id := c.ConnectionID
	h.mu.Lock()
	held := h.holders[id]
	h.mu.Unlock()
	if !held {
		// Named locks live in go-mysql-server's own thread-safe lock
		// subsystem, not in table data. GET_LOCK waits (for seconds, in the
		// store's migration lock) for a holder that needs the token to make
		// progress, so waiting with the token would stall both.
		if namedLockOnly(query) {
			return mysqlErrorCode(run())
		}
		if err := h.acquire(ctx); err != nil {
			return err
		}
		h.mu.Lock()
		h.holders[id] = true
		h.mu.Unlock()
	}

	err := mysqlErrorCode(run())

	if !h.inTransaction(id) {
		h.mu.Lock()
		delete(h.holders, id)
		h.mu.Unlock()
		<-h.token
	}
	return err
}

// acquire waits for the token, failing like InnoDB when another
// connection's transaction keeps it longer than the lock wait timeout.
func (h *serialHandler) acquire(ctx context.Context) error {
	t := time.NewTimer(h.wait)
	defer t.Stop()
	select {
	case h.token <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return mysql.NewSQLError(mysql.ERLockWaitTimeout, mysql.SSUnknownSQLState,
			"Lock wait timeout exceeded; try restarting transaction")
	}
}

// inTransaction reports whether connection id is inside a transaction that
// must keep the token: one opened with START TRANSACTION / BEGIN, or any
// statement's while autocommit is off. An implicit transaction left open
// with autocommit on belongs to a statement that failed; it is rolled back
// here (see serialHandler).
func (h *serialHandler) inTransaction(id uint32) bool {
	h.mu.Lock()
	s := h.sessions[id]
	h.mu.Unlock()
	if s == nil {
		return false
	}
	tx := s.GetTransaction()
	if tx == nil {
		return false
	}
	if s.GetIgnoreAutoCommit() {
		return true
	}
	ctx := gms.NewContext(context.Background(), gms.WithSession(s))
	if autocommit, err := plan.IsSessionAutocommit(ctx); err == nil && !autocommit {
		return true
	}
	// memory.Session's Rollback only discards the session's table copies;
	// it cannot fail.
	_ = s.Rollback(ctx, tx)
	s.SetTransaction(nil)
	return false
}

// drop forgets connection id's transaction state and gives back the token
// if it held it. closed also forgets its session.
func (h *serialHandler) drop(id uint32, closed bool) {
	h.mu.Lock()
	held := h.holders[id]
	delete(h.holders, id)
	if closed {
		delete(h.sessions, id)
	}
	h.mu.Unlock()
	if held {
		<-h.token
	}
}

// erCheckConstraintViolated is MySQL 8's ER_CHECK_CONSTRAINT_VIOLATED.
const erCheckConstraintViolated = 3819

// checkViolated matches go-mysql-server's text for a failed CHECK.
var checkViolated = regexp.MustCompile(`^Check constraint "(.*)" violated`)

// mysqlErrorCode gives errors the number MySQL would. go-mysql-server (as of
// v0.20.0) reports a violated CHECK constraint as the generic 1105; callers
// and tests that tell a broken invariant from other failures look for 3819
// (MySQL) or 4025 (MariaDB).
func mysqlErrorCode(err error) error {
	var se *mysql.SQLError
	if !errors.As(err, &se) || se.Num != mysql.ERUnknownError {
		return err
	}
	m := checkViolated.FindStringSubmatch(se.Message)
	if m == nil {
		return err
	}
	return mysql.NewSQLError(erCheckConstraintViolated, mysql.SSUnknownSQLState,
		"Check constraint '%s' is violated.", m[1])
}

// doStmt matches MySQL's DO statement, which go-mysql-server's parser does
// not know.
var doStmt = regexp.MustCompile(`(?is)^\s*DO\s+`)

// rewriteDo turns "DO expr" into "SELECT expr". DO evaluates expressions
// and discards them; SELECT returns them as a row, which a client's Exec
// reads and drops (go-sql-driver does), so callers see the same outcome.
// internal/orderdb now uses SELECT RELEASE_LOCK(?); the rewrite stays for
// any other client that sends DO.
func rewriteDo(query string) string {
	loc := doStmt.FindStringIndex(query)
	if loc == nil {
		return query
	}
	return "SELECT " + query[loc[1]:]
}

// lockCall matches a statement that only calls named-lock functions.
var lockCall = regexp.MustCompile(`(?is)^\s*SELECT\s+(GET_LOCK|RELEASE_LOCK|RELEASE_ALL_LOCKS|IS_FREE_LOCK|IS_USED_LOCK)\s*\(`)

// namedLockOnly reports whether query is a SELECT of a named-lock function
// that reads no table.
func namedLockOnly(query string) bool {
	if !lockCall.MatchString(query) {
		return false
	}
	q := strings.ToUpper(query)
	return !strings.Contains(q, " FROM ") && !strings.Contains(q, ";")
}

package orderdb

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/flashsale/flashsale"

	"github.com/go-sql-driver/mysql"
	"github.com/pressly/goose/v3"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/flashsale/flashsale/migrations"
)

// Pool sizing. Every order operation is a short transaction, so a few dozen
// connections saturate a single primary; more would only queue inside InnoDB
// on the hot inventory rows instead of in the pool.
const (
	maxOpenConns    = DefaultMaxConns
	maxIdleConns    = DefaultMaxConns
	connMaxLifetime = 30 * time.Minute
	connMaxIdleTime = 5 * time.Minute
)

// MySQL server error numbers the store reacts to.
const (
	errNoDatabase   = 1049 // ER_BAD_DB_ERROR: database named in the DSN does not exist
	errDuplicateKey = 1062 // ER_DUP_ENTRY
	errDeadlock     = 1213 // ER_LOCK_DEADLOCK: InnoDB rolled the whole transaction back
)

// permanentErrors are the MySQL and MariaDB answers about the data itself:
// the same statement on the same rows gets the same answer on every retry,
// so retrying only holds an order (and its units) hostage. Anything else,
// deadlocks (1213), lock wait timeouts (1205), a server shutting down or
// read-only during a failover, connection errors, stays retryable. Schema
// errors (unknown table or column) are left retryable on purpose too: they
// come from a deployment out of step, which the next deployment fixes.
var permanentErrors = map[uint16]string{
	1048: "ER_BAD_NULL_ERROR",
	1062: "ER_DUP_ENTRY",
	1169: "ER_DUP_UNIQUE",
	1216: "ER_NO_REFERENCED_ROW",
	1217: "ER_ROW_IS_REFERENCED",
	1264: "ER_WARN_DATA_OUT_OF_RANGE",
	1265: "WARN_DATA_TRUNCATED",
	1292: "ER_TRUNCATED_WRONG_VALUE",
	1364: "ER_NO_DEFAULT_FOR_FIELD",
	1366: "ER_TRUNCATED_WRONG_VALUE_FOR_FIELD",
	1406: "ER_DATA_TOO_LONG",
	1451: "ER_ROW_IS_REFERENCED_2",
	1452: "ER_NO_REFERENCED_ROW_2",
	1586: "ER_DUP_ENTRY_WITH_KEY_NAME",
	1690: "ER_DATA_OUT_OF_RANGE",
	3819: "ER_CHECK_CONSTRAINT_VIOLATED", // MySQL 8
	4025: "ER_CONSTRAINT_FAILED",         // MariaDB CHECK
}

// classify marks err Unavailable when MySQL did not answer (outage), or
// Permanent (flashsale.Permanent) when the server's answer can never
// change (permanentErrors). expected says which errors the caller's own code
// path handles (e.g. a duplicate key that means "a concurrent attempt won");
// those are left as they are.
func classify(err error, expected func(error) bool) error {
	if isOutage(err) {
		return outage(err)
	}
	if err == nil || flashsale.ErrorCode(err) == flashsale.Permanent || (expected != nil && expected(err)) {
		return err
	}
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return err
	}
	if _, ok := permanentErrors[me.Number]; !ok {
		return err
	}
	return fmt.Errorf("%w: %w", flashsale.Errorf(flashsale.Permanent, "permanent database error"), err)
}

// maxTxAttempts bounds retries of a transaction that InnoDB aborted as a
// deadlock victim. The abort rolls everything back, so rerunning is safe.
const maxTxAttempts = 4

// Store is the MySQL order store. It is safe for concurrent use.
type Store struct {
	db    *gorm.DB
	sqlDB *sql.DB
	// batch: the server runs several statements sent in one packet, so a
	// stock move and its journal entry cost one round trip (see apply).
	batch bool
}

// DefaultMaxConns is the connection pool's size unless MYSQL_MAX_CONNS
// says otherwise (SetMaxConns).
const DefaultMaxConns = 32

// SetMaxConns sizes the connection pool: at most n open, n kept idle.
func (s *Store) SetMaxConns(n int) {
	s.sqlDB.SetMaxOpenConns(n)
	s.sqlDB.SetMaxIdleConns(n)
}

// Open creates the database named in dsn if it is missing, connects with a
// bounded pool and brings the schema up to date with the embedded goose
// migrations. Several processes may call Open at once: migrations run under a
// server-wide GET_LOCK, so exactly one applies them and the others then find
// nothing pending.
//
// The connection is forced to parseTime=true, loc=UTC and time_zone='+00:00'
// so DATETIME columns round-trip as UTC whatever the DSN or server default.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("open order db: parse dsn: %w", err)
	}
	if cfg.DBName == "" {
		return nil, invalidf("open order db: dsn names no database")
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	if _, ok := cfg.Params["time_zone"]; !ok {
		cfg.Params["time_zone"] = "'+00:00'"
	}

	connector, err := newConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("open order db: %w", err)
	}
	sqlDB := sql.OpenDB(connector)
	sqlDB.SetMaxOpenConns(maxOpenConns)
	sqlDB.SetMaxIdleConns(maxIdleConns)
	sqlDB.SetConnMaxLifetime(connMaxLifetime)
	sqlDB.SetConnMaxIdleTime(connMaxIdleTime)

	if err := ensureDatabase(ctx, sqlDB, cfg); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("open order db %s: %w", cfg.DBName, outage(err))
	}

	gdb, err := gorm.Open(gormmysql.New(gormmysql.Config{Conn: sqlDB}), &gorm.Config{
		Logger: logger.Default.LogMode(logger.Silent),
		// Every write that needs atomicity opens its own transaction; the
		// implicit one GORM wraps around single statements is only overhead.
		SkipDefaultTransaction: true,
		NowFunc:                now,
	})
	if err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("open order db %s: gorm: %w", cfg.DBName, err)
	}
	if err := codeOutages(gdb); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("open order db %s: %w", cfg.DBName, err)
	}

	if err := migrate(ctx, sqlDB, cfg.DBName); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("open order db %s: %w", cfg.DBName, outage(err))
	}
	return &Store{db: gdb, sqlDB: sqlDB, batch: probeBatch(ctx, sqlDB)}, nil
}

// newConnector prefers client-side parameter interpolation: without it every
// statement with arguments costs an extra prepare round trip, which matters
// while a transaction holds a hot inventory row lock. The driver refuses
// interpolation for collations where it would be unsafe; then fall back.
// With interpolation, several statements may share a packet (a stock move
// and its journal entry, apply): every argument is still escaped by the
// driver, and the store sends only its own SQL.
func newConnector(cfg *mysql.Config) (driver.Connector, error) {
	fast := cfg.Clone()
	fast.InterpolateParams = true
	fast.MultiStatements = true
	if c, err := mysql.NewConnector(fast); err == nil {
		return c, nil
	}
	return mysql.NewConnector(cfg)
}

// ensureDatabase creates the database only when the server says it is
// missing, so a deployment whose user lacks CREATE privileges still works
// against a pre-created database.
func ensureDatabase(ctx context.Context, db *sql.DB, cfg *mysql.Config) error {
	err := db.PingContext(ctx)
	if err == nil || !isMySQLError(err, errNoDatabase) {
		return err
	}
	admin := cfg.Clone()
	admin.DBName = ""
	adb, err := sql.Open("mysql", admin.FormatDSN())
	if err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	defer adb.Close()
	name := "`" + strings.ReplaceAll(cfg.DBName, "`", "``") + "`"
	// IF NOT EXISTS: another process may be creating it at the same moment.
	if _, err := adb.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+name+" CHARACTER SET utf8mb4"); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	return db.PingContext(ctx)
}

// migrate applies pending migrations. It calls no Provider.Close: that would
// close the pool the store keeps using.
//
// The whole run, including goose's creation of its version table, happens
// under a MySQL named lock held on a dedicated connection. goose's own
// session-locker hook runs after the version table check, and several
// processes starting at once then raced to "missing zero version migration".
func migrate(ctx context.Context, db *sql.DB, dbName string) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()
	lock := newMigrationLocker(dbName)
	if err := lock.SessionLock(ctx, conn); err != nil {
		return err
	}
	// Unlock on a fresh context: ctx may be the reason we are leaving.
	defer func() { _ = lock.SessionUnlock(context.WithoutCancel(ctx), conn) }()

	p, err := goose.NewProvider(goose.DialectMySQL, db, migrations.FS)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// migrationLocker serialises goose runs of several processes with a MySQL
// named lock. Goose ships only a Postgres locker. A named lock is tied to the
// session, so a crashed migrator releases it automatically.
type migrationLocker struct {
	name string
}

func newMigrationLocker(dbName string) migrationLocker {
	// Lock names are server-wide and limited to 64 characters, so include the
	// database (two databases on one server migrate independently) via a
	// hash that always fits.
	sum := sha256.Sum256([]byte(dbName))
	return migrationLocker{name: "goose:" + hex.EncodeToString(sum[:16])}
}

func (l migrationLocker) SessionLock(ctx context.Context, conn *sql.Conn) error {
	// Wait in short slices so a cancelled ctx is noticed promptly even if the
	// driver could not interrupt the server-side wait.
	for {
		var got sql.NullInt64
		if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 5)", l.name).Scan(&got); err != nil {
			return fmt.Errorf("migration lock: %w", err)
		}
		if got.Valid && got.Int64 == 1 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("migration lock: %w", err)
		}
	}
}

func (l migrationLocker) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	// SELECT, not DO: go-mysql-server (the demo's embedded store) cannot
	// parse DO, and a lock left held would block the next migration.
	var released sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", l.name).Scan(&released); err != nil {
		return fmt.Errorf("migration unlock: %w", err)
	}
	return nil
}

// Close closes the connection pool.
func (s *Store) Close() error { return s.sqlDB.Close() }

// Ping checks that the database is reachable: Unavailable when it is not.
func (s *Store) Ping(ctx context.Context) error { return outage(s.sqlDB.PingContext(ctx)) }

// DB exposes the GORM handle for read-only reporting and tests. Writes to the
// store's tables must go through the Store methods, which keep the journal
// and the invariants in step.
func (s *Store) DB() *gorm.DB { return s.db }

// writeTx runs fn in a READ COMMITTED transaction and reruns it when InnoDB
// picked it as a deadlock victim, or when retry(err) says another attempt
// will take a different path (e.g. a unique-key race now visible). An error
// it returns is classified (classify): Unavailable when MySQL did not
// answer, Permanent when no rerun can help.
//
// READ COMMITTED because every decision is taken on rows locked with FOR
// UPDATE or a conditional UPDATE anyway; it avoids the gap locks REPEATABLE
// READ puts on missing keys (unknown order ids, new SKUs), which would make
// unrelated inserts wait and deadlock.
func (s *Store) writeTx(ctx context.Context, retry func(error) bool, fn func(tx *gorm.DB) error) error {
	opts := &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	for attempt := 1; ; attempt++ {
		err := s.db.WithContext(ctx).Transaction(fn, opts)
		if err == nil || attempt >= maxTxAttempts || ctx.Err() != nil {
			return classify(err, retry)
		}
		if !isMySQLError(err, errDeadlock) && (retry == nil || !retry(err)) {
			return classify(err, retry)
		}
		// Jitter so the two deadlocked transactions do not collide again.
		time.Sleep(time.Duration(attempt) * time.Duration(1+rand.IntN(5)) * time.Millisecond)
	}
}

// readTx runs fn in a read-only REPEATABLE READ transaction so an order, its
// items and its payments come from one consistent snapshot.
func (s *Store) readTx(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return outage(s.db.WithContext(ctx).Transaction(fn, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}))
}

func isMySQLError(err error, number uint16) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == number
}

func isDuplicateKey(err error) bool { return isMySQLError(err, errDuplicateKey) }

// now is the store's clock: UTC, truncated to the DATETIME(3) precision so a
// value returned by a write equals the one a later read returns.
func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// truncate cuts s to at most n runes (VARCHAR lengths count characters). A
// reason is informational; it must never be why a payment fails to record.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}

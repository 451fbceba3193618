package orderdb

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"github.com/flashsale/flashsale"
)

// Server errors that say MySQL cannot serve anybody right now, not that it
// refused this statement.
const (
	errTooManyConns   = 1040 // ER_CON_COUNT_ERROR
	errServerShutdown = 1053 // ER_SERVER_SHUTDOWN
)

// isOutage reports whether err means MySQL could not be reached or did not
// answer in time: a refused or timed-out dial, a dropped connection, a
// deadline that ran out waiting for it, a server shutting down or out of
// connections. A caller's own cancellation (context.Canceled) is not one:
// the database may be fine, the caller left.
func isOutage(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if me, ok := errors.AsType[*mysql.MySQLError](err); ok {
		return me.Number == errTooManyConns || me.Number == errServerShutdown
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		// Includes context.DeadlineExceeded, which is a net.Error too.
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// errUnavailable is the code of an outage; its words are for the client
// (the cause, with the host, stays wrapped behind it for the logs).
var errUnavailable = &flashsale.Error{Code: flashsale.Unavailable, Message: "database unavailable"}

// outage codes err Unavailable when MySQL did not answer (isOutage), and
// keeps err wrapped so errors.Is/As and the logged text still see the
// driver's error. Already coded errors pass as they are.
func outage(err error) error {
	if !isOutage(err) || flashsale.ErrorCode(err) != flashsale.Internal {
		return err
	}
	return fmt.Errorf("%w: %w", errUnavailable, err)
}

// codeOutages installs outage after every GORM statement, so each of the
// store's methods answers Unavailable for a database that is down without
// each naming it. What GORM runs outside its callbacks (BEGIN, COMMIT, a
// ping, Open's own statements) goes through outage where it is called:
// writeTx and readTx (classify), Ping and Open.
func codeOutages(db *gorm.DB) error {
	code := func(tx *gorm.DB) {
		if tx.Error != nil {
			tx.Error = outage(tx.Error)
		}
	}
	cb := db.Callback()
	const name = "flashsale:outage"
	return errors.Join(
		cb.Create().After("*").Register(name, code),
		cb.Query().After("*").Register(name, code),
		cb.Update().After("*").Register(name, code),
		cb.Delete().After("*").Register(name, code),
		cb.Row().After("*").Register(name, code),
		cb.Raw().After("*").Register(name, code),
	)
}

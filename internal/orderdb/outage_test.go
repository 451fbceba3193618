package orderdb

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
)

var unavailable = &flashsale.Error{Code: flashsale.Unavailable}

// A database that does not answer is Unavailable from Open already, with
// the driver's error still in the chain for the logs.
func TestOpenUnreachableIsUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Open(ctx, "root@tcp(127.0.0.1:1)/flashsale")
	require.ErrorIs(t, err, unavailable)
	require.Equal(t, flashsale.Unavailable, flashsale.ErrorCode(err))
	_, isNet := errors.AsType[net.Error](err)
	require.True(t, isNet, "cause kept: %v", err)
	require.Contains(t, err.Error(), "127.0.0.1:1", "the log sees the cause")
	require.Equal(t, "database unavailable", flashsale.ErrorMessage(err), "the client sees no host")
}

func TestClassifyOutages(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	for _, tt := range []struct {
		name string
		err  error
		want flashsale.Code
	}{
		{"refused", refused, flashsale.Unavailable},
		{"dropped", mysql.ErrInvalidConn, flashsale.Unavailable},
		{"bad conn", driver.ErrBadConn, flashsale.Unavailable},
		{"deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), flashsale.Unavailable},
		{"shutting down", &mysql.MySQLError{Number: errServerShutdown}, flashsale.Unavailable},
		{"caller left", fmt.Errorf("query: %w", context.Canceled), flashsale.Internal},
		{"deadlock", &mysql.MySQLError{Number: errDeadlock}, flashsale.Internal},
		{"lock wait", &mysql.MySQLError{Number: 1205}, flashsale.Internal},
		{"check", &mysql.MySQLError{Number: 4025}, flashsale.Permanent},
		{"coded", flashsale.Errorf(flashsale.OrderNotFound, "no"), flashsale.OrderNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := classify(tt.err, nil)
			require.Equal(t, tt.want, flashsale.ErrorCode(got), "%v", got)
			require.ErrorIs(t, got, tt.err, "the cause stays wrapped")
			require.Equal(t, got, classify(got, nil), "classifying twice changes nothing")
		})
	}
}

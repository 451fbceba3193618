//go:build integration

package orderdb

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flashsale/flashsale"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/flashsale/flashsale/internal/testenv"
)

// The answers MariaDB gives about the data itself are &flashsale.Error{Code: flashsale.Permanent}; the
// ones that a retry can change are not. Each case is a real statement
// against the real server, so the error numbers are the server's own.
func TestWriteTxClassifiesServerErrors(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, testenv.MySQLDSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, err = s.PutSKU(ctx, flashsale.SKU{ID: "sku", Total: 3, Price: 10, Buckets: 1, PerUserLimit: 1})
	require.NoError(t, err)
	_, err = s.RecordRefund(ctx, Payment{TransactionID: "t1", OrderID: "o1", Amount: 1})
	require.NoError(t, err)

	permanent := []struct {
		name   string
		number uint16
		sql    string
	}{
		{"check constraint", 4025, "UPDATE inventory SET available = available - 100 WHERE sku_id = 'sku'"},
		{"duplicate key", 1062, "INSERT INTO payments (transaction_id, order_id, amount, status) VALUES ('t1', 'o2', 1, 'CAPTURED')"},
		{"data too long", 1406, "UPDATE payments SET order_id = '" + strings.Repeat("x", 65) + "' WHERE transaction_id = 't1'"},
		{"out of range", 1264, "UPDATE inventory SET bucket_count = 99999999999 WHERE sku_id = 'sku'"},
		{"null", 1048, "UPDATE payments SET order_id = NULL WHERE transaction_id = 't1'"},
	}
	for _, c := range permanent {
		t.Run(c.name, func(t *testing.T) {
			err := s.writeTx(ctx, nil, func(tx *gorm.DB) error { return tx.Exec(c.sql).Error })
			var me *mysql.MySQLError
			require.ErrorAs(t, err, &me)
			require.Equal(t, c.number, me.Number, "server answer: %v", err)
			require.ErrorIs(t, err, &flashsale.Error{Code: flashsale.Permanent})
		})
	}

	t.Run("duplicate key the caller expects", func(t *testing.T) {
		err := s.writeTx(ctx, isDuplicateKey, func(tx *gorm.DB) error { return tx.Exec(permanent[1].sql).Error })
		require.True(t, isDuplicateKey(err), "%v", err)
		require.NotErrorIs(t, err, &flashsale.Error{Code: flashsale.Permanent})
	})

	t.Run("lock wait timeout", func(t *testing.T) {
		holder := s.db.Begin()
		require.NoError(t, holder.Error)
		t.Cleanup(func() { holder.Rollback() })
		require.NoError(t, holder.Exec("SELECT * FROM inventory WHERE sku_id = 'sku' FOR UPDATE").Error)

		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		err := s.writeTx(ctx, nil, func(tx *gorm.DB) error {
			if err := tx.Exec("SET SESSION innodb_lock_wait_timeout = 1").Error; err != nil {
				return err
			}
			return tx.Exec("UPDATE inventory SET price = 11 WHERE sku_id = 'sku'").Error
		})
		require.True(t, isMySQLError(err, 1205), "%v", err)
		require.NotErrorIs(t, err, &flashsale.Error{Code: flashsale.Permanent})
	})

	t.Run("connection error", func(t *testing.T) {
		require.NotErrorIs(t, classify(mysql.ErrInvalidConn, nil), &flashsale.Error{Code: flashsale.Permanent})
		require.NotErrorIs(t, classify(errors.New("dial tcp 127.0.0.1:3306: connect: connection refused"), nil), &flashsale.Error{Code: flashsale.Permanent})
		require.NotErrorIs(t, classify(&mysql.MySQLError{Number: errDeadlock}, nil), &flashsale.Error{Code: flashsale.Permanent})
	})
}

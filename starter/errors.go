package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/internal/orderdb"
	"github.com/flashsale/flashsale/internal/orders"
)

// Stable error codes, the same the HTTP API uses.
const (
	codeUsage           = "USAGE"
	codeInvalid         = "INVALID_REQUEST"
	codeUnknownSKU      = "UNKNOWN_SKU"
	codeOrderNotFound   = "ORDER_NOT_FOUND"
	codeOrderClosed     = "ORDER_CLOSED"
	codeOrderIDConflict = "ORDER_ID_CONFLICT"
	codeSKUInUse        = "SKU_IN_USE"
	codePreheatMismatch = "PREHEAT_MISMATCH"
	codeInternal        = "INTERNAL"
)

// cliError is an error with a stable code.
type cliError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *cliError) Error() string { return e.Code + ": " + e.Message }

func usageError(msg string) error { return &cliError{Code: codeUsage, Message: msg} }

func invalid(format string, args ...any) error {
	return &cliError{Code: codeInvalid, Message: fmt.Sprintf(format, args...)}
}

// classify maps the errors of the packages underneath to codes. The CLI is
// an operator's tool, so the message keeps the full error text.
func classify(err error) *cliError {
	var ce *cliError
	if errors.As(err, &ce) {
		return ce
	}
	code := codeInternal
	switch {
	case errors.Is(err, orders.ErrInvalid):
		code = codeInvalid
	case errors.Is(err, orders.ErrNotFound), errors.Is(err, orderdb.ErrNotFound):
		code = codeOrderNotFound
	case errors.Is(err, orders.ErrClosed):
		code = codeOrderClosed
	case errors.Is(err, orders.ErrIDConflict):
		code = codeOrderIDConflict
	case errors.Is(err, orderdb.ErrUnknownSKU), errors.Is(err, inventory.ErrUnknownSKU):
		code = codeUnknownSKU
	case errors.Is(err, orderdb.ErrSKUInUse):
		code = codeSKUInUse
	case errors.Is(err, inventory.ErrPreheatMismatch):
		code = codePreheatMismatch
	}
	return &cliError{Code: code, Message: err.Error()}
}

func writeError(w io.Writer, err error) {
	_ = json.NewEncoder(w).Encode(classify(err))
}

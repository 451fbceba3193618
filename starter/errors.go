package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/flashsale/flashsale"
)

// The CLI's own codes, beside the house's (flashsale): a command line it
// cannot run, and a check that found violations.
const (
	codeUsage    flashsale.Code = "USAGE"
	codeViolated flashsale.Code = "INVARIANT_VIOLATED"
)

func usageError(msg string) error { return &flashsale.Error{Code: codeUsage, Message: msg} }

func invalid(format string, args ...any) error {
	return flashsale.Errorf(flashsale.Invalid, format, args...)
}

// errorOut is what a failed command prints on stderr: the code and message
// every door shows (flashsale.ErrorCode, flashsale.ErrorMessage) and, since
// the CLI is an operator's tool, the whole error with the operation that
// failed, when it says more.
type errorOut struct {
	Code    flashsale.Code `json:"code"`
	Message string         `json:"message"`
	Error   string         `json:"error,omitempty"`
}

func writeError(w io.Writer, err error) {
	out := errorOut{Code: flashsale.ErrorCode(err), Message: flashsale.ErrorMessage(err)}
	if full := err.Error(); full != out.Message {
		out.Error = full
	}
	_ = json.NewEncoder(w).Encode(out)
}

// exitCode is the status a failed command exits with: 2 for a command line
// it could not run, 1 for anything else.
func exitCode(err error) int {
	if flashsale.ErrorCode(err) == codeUsage {
		return 2
	}
	return 1
}

// violations is the error of a check that found n violations.
func violations(n int) error {
	return &flashsale.Error{Code: codeViolated, Message: fmt.Sprintf("%d invariant violations", n)}
}

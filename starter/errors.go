package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/flashsale/flashsale"
)

// The CLI's own codes, beside the house's (flashsale): a command line it
// cannot run, a check that found violations, and a go/no-go that failed.
const (
	codeUsage    flashsale.Code = "USAGE"
	codeViolated flashsale.Code = "INVARIANT_VIOLATED"
	codeNoGo     flashsale.Code = "NO_GO"
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

// Exit statuses, printed by starter --help (exitHelp): a script tells "try
// again later" from "this was refused".
const (
	exitRefused     = 1 // any other failure: a refusal, a violation, a bug
	exitUsage       = 2 // a command line it could not run
	exitUnavailable = 3 // Redis, MySQL or Temporal did not answer: retry as it is
)

const exitHelp = `exit status: 0 done; 1 refused or failed (the code on stderr says why);
2 a command line it could not run; 3 UNAVAILABLE: Redis, MySQL or Temporal
did not answer, nothing changed, the same command may be retried as it is.`

// exitCode is the status a failed command exits with.
func exitCode(err error) int {
	switch flashsale.ErrorCode(err) {
	case codeUsage:
		return exitUsage
	case flashsale.Unavailable:
		return exitUnavailable
	}
	return exitRefused
}

// violations is the error of a check that found n violations.
func violations(n int) error {
	return &flashsale.Error{Code: codeViolated, Message: fmt.Sprintf("%d invariant violations", n)}
}

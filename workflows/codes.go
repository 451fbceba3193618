package workflows

import (
	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/activities/contract"
)

// codeOf is the one place the workflow reads an activity's answer in the
// house vocabulary: the flashsale code of its business answer (the table
// between codes and application error types is activities/contract/errors.go),
// flashsale.Unavailable for any other failure (a dependency that did not
// answer within the step's budget, a timeout, a cancellation), and "" for
// success. Each step then decides what a code means for the order.
func codeOf(err error) flashsale.Code {
	if err == nil {
		return ""
	}
	if code, ok := contract.CodeOf(err); ok {
		return code
	}
	return flashsale.Unavailable
}

// answered reports whether err is an activity's business answer: final,
// so never retried or repeated as a regular activity.
func answered(err error) bool {
	_, ok := contract.CodeOf(err)
	return ok
}

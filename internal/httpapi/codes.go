package httpapi

import "github.com/flashsale/flashsale"

// The HTTP door's own refusals. No store, workflow or use case returns
// these: they are about the request as HTTP carried it (its route, method,
// body, signature), so they are declared here, beside the one table that
// maps them (answers), and not in the domain's vocabulary.
const (
	// Unauthorized: an operator endpoint without the admin bearer token.
	Unauthorized flashsale.Code = "UNAUTHORIZED"
	// UserMismatch: a body's user_id names another buyer than the token.
	UserMismatch flashsale.Code = "USER_MISMATCH"
	// BadSignature: a payment callback whose X-Signature does not verify.
	BadSignature flashsale.Code = "BAD_SIGNATURE"
	// NotFound: no such route (or no such public page).
	NotFound flashsale.Code = "NOT_FOUND"
	// MethodNotAllowed: the route exists, the method does not.
	MethodNotAllowed flashsale.Code = "METHOD_NOT_ALLOWED"
	// PayloadTooLarge: the body is over maxBodyBytes (64 KiB).
	PayloadTooLarge flashsale.Code = "PAYLOAD_TOO_LARGE"
	// RequestTimeout: the request's body did not arrive within the
	// server's read timeout. Nothing was done; the client may send it
	// again.
	RequestTimeout flashsale.Code = "REQUEST_TIMEOUT"
)

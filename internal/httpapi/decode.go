package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/flashsale/flashsale"
)

// maxBodyBytes caps every request body. The largest legitimate one (an
// order of 20 lines) is under 2 KiB; anything near the cap is an attack or a
// bug, and reading it would cost memory per connection.
const maxBodyBytes = 64 << 10

// readBody reads at most maxBodyBytes; a larger body is PayloadTooLarge, a
// body still arriving when the server's read timeout (Config.ReadTimeout)
// passed is RequestTimeout. Any other failure is the client's connection
// ending mid-body: nobody is left to answer (clientGone).
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, fmt.Errorf("read body: %w: %w", &flashsale.Error{Code: PayloadTooLarge}, err)
		}
		if bodyTimedOut(err) {
			return nil, fmt.Errorf("read body: %w: %w", &flashsale.Error{Code: RequestTimeout}, err)
		}
		return nil, fmt.Errorf("read body: %w: %w", invalid("could not read the request body"), err)
	}
	return body, nil
}

// bodyTimedOut tells the read deadline net/http set from ReadTimeout
// (the client is still there) from the connection closing or resetting
// (it is not).
func bodyTimedOut(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	ne, ok := errors.AsType[net.Error](err)
	return ok && ne.Timeout()
}

// decodeJSON decodes exactly one JSON object into dst. Unknown fields,
// wrong types and trailing data are refused: a field the server ignores
// silently is a field the client believes it set.
func decodeJSON(body []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return invalid(describeJSONError(err))
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return invalid("request body must hold a single JSON object")
	}
	return nil
}

// describeJSONError names the problem without echoing the input.
func describeJSONError(err error) string {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		if te.Field != "" {
			return fmt.Sprintf("field %q must be %s", te.Field, jsonKind(te.Type.Kind().String()))
		}
		return "request body must be a JSON object"
	}
	if _, ok := errors.AsType[*json.SyntaxError](err); ok {
		return "malformed JSON"
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "request body is empty or cut short"
	}
	// A field's own decoder (flashsale.Duration) says what it wants,
	// without the input.
	if fe, ok := errors.AsType[*flashsale.Error](err); ok {
		return fe.Message
	}
	// DisallowUnknownFields reports `json: unknown field "<name>"`: echo
	// the name, cut short, so a client sees which one.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if len(name) > 66 {
			name = name[:66] + `..."`
		}
		return "unknown field " + strings.ToValidUTF8(name, "?")
	}
	return "invalid JSON"
}

func jsonKind(kind string) string {
	switch kind {
	case "int64", "int":
		return "an integer"
	case "string":
		return "a string"
	case "slice":
		return "an array"
	case "struct":
		return "an object"
	}
	return "of another type"
}

// checkID is flashsale.CheckID for an id this door takes from a path or a
// header.
func checkID(field, v string, max int) error { return flashsale.CheckID(field, v, max) }

// orderRequest is the POST /api/v1/orders body.
type orderRequest struct {
	// ClientOrderID is the buyer's idempotency key, optional: a client
	// that sets it can retry safely. The order's id is the answer's
	// order_id, never chosen by the client.
	ClientOrderID *string `json:"client_order_id"`
	// OrderID is only here to be refused by name (errOrderIDInRequest):
	// any value, null included, is a client written for the earlier
	// contract, where the key travelled as order_id.
	OrderID json.RawMessage `json:"order_id,omitempty"`
	UserID  string          `json:"user_id"`
	Items   []itemRequest   `json:"items"`
}

type itemRequest struct {
	SKU      string `json:"sku_id"`
	Quantity int64  `json:"quantity"`
}

// errOrderIDInRequest refuses a buy naming order_id. The answer's order_id
// is the order's id; a request field of the same name meaning the buyer's
// key is what led clients to use the wrong id for every later call, so
// the old name is refused with the new one named, never read as the key.
var errOrderIDInRequest = invalid("order_id is not a buy request field: send your idempotency key as client_order_id " +
	"(the answer's order_id is the order's id, for reading, cancelling and paying it)")

// decodeOrder turns a buy request body into an order, checked by the one
// validation of an order (flashsale.Order.Validate), and the buyer's key.
// The order's OrderID is left empty (buying.Service.OrderIDFor names it
// from the key), the user id too when the body names none (the token's
// subject is the buyer; createOrder fills it in).
func decodeOrder(body []byte) (flashsale.Order, string, error) {
	var req orderRequest
	if err := decodeJSON(body, &req); err != nil {
		return flashsale.Order{}, "", err
	}
	if req.OrderID != nil {
		return flashsale.Order{}, "", errOrderIDInRequest
	}
	o := flashsale.Order{UserID: req.UserID}
	for _, it := range req.Items {
		o.Items = append(o.Items, flashsale.Item{SKU: it.SKU, Quantity: it.Quantity})
	}
	// What the server fills in gets a placeholder for the check: the
	// order's id (named from the key) and the buyer when the body names
	// none.
	check := o
	check.OrderID = "placeholder"
	if check.UserID == "" {
		check.UserID = "placeholder"
	}
	var problems []string
	if err := check.Validate(); err != nil {
		problems = append(problems, flashsale.ErrorMessage(err))
	}
	key := ""
	if req.ClientOrderID != nil {
		// Present but empty is refused: the client meant to choose one.
		key = *req.ClientOrderID
		if err := flashsale.CheckClientOrderID(key); err != nil {
			problems = append(problems, flashsale.ErrorMessage(err))
		}
	}
	if len(problems) > 0 {
		return flashsale.Order{}, "", invalid(strings.Join(problems, "\n"))
	}
	return o, key, nil
}

// Callback statuses a payment provider reports.
const (
	CallbackSuccess = "SUCCESS"
	CallbackFailed  = "FAILED"
)

// Callback is the payment provider's webhook body (POST
// /api/v1/payments/callback): the API decodes it, and the CLI's pay
// --via-api sends it.
type Callback struct {
	OrderID       string `json:"order_id"`
	TransactionID string `json:"transaction_id"`
	Amount        int64  `json:"amount"`
	// Status is the payment's, SUCCESS or FAILED (not the order's).
	Status string `json:"payment_status"`
}

func decodeCallback(body []byte) (Callback, error) {
	var cb Callback
	if err := decodeJSON(body, &cb); err != nil {
		return Callback{}, err
	}
	if err := checkID("order_id", cb.OrderID, flashsale.MaxIDLength); err != nil {
		return Callback{}, err
	}
	if err := checkID("transaction_id", cb.TransactionID, flashsale.MaxTransactionIDLength); err != nil {
		return Callback{}, err
	}
	if cb.Amount <= 0 {
		return Callback{}, invalid("amount must be a positive integer in minor units")
	}
	if cb.Status != CallbackSuccess && cb.Status != CallbackFailed {
		return Callback{}, invalid(`payment_status must be "SUCCESS" or "FAILED"`)
	}
	return cb, nil
}

// skuRequest is the PUT /api/v1/admin/skus/{sku} body. Pointers tell a
// missing field from a zero one: a sale with total 0 is legal, a forgotten
// total is not.
type skuRequest struct {
	Total        *int64 `json:"total"`
	Price        *int64 `json:"price"`
	Buckets      *int   `json:"buckets"`
	PerUserLimit *int   `json:"per_user_limit"`
	// Queued: the SKU is for a fair sale, and no buy of it is taken until
	// its sale is started (flashsale.SKU.Queued).
	Queued bool `json:"queued"`
	// The SKU's terms (flashsale.Terms), checked by its Validate.
	flashsale.Terms
}

// decodeSKU reads the definition of sku; its ranges are checked by
// flashsale.SKU.Validate where it is defined (catalog.Define).
func decodeSKU(body []byte) (flashsale.SKU, error) {
	var req skuRequest
	if err := decodeJSON(body, &req); err != nil {
		return flashsale.SKU{}, err
	}
	switch {
	case req.Total == nil:
		return flashsale.SKU{}, invalid(fmt.Sprintf("total is required, 0-%d", flashsale.MaxSKUTotal))
	case req.Price == nil:
		return flashsale.SKU{}, invalid(fmt.Sprintf("price is required, 0-%d minor units", flashsale.MaxPrice))
	}
	in := flashsale.SKU{Total: *req.Total, Price: *req.Price, Buckets: flashsale.DefaultBuckets, PerUserLimit: 1, Queued: req.Queued,
		Terms: req.Terms}
	if req.Buckets != nil {
		in.Buckets = *req.Buckets
	}
	if req.PerUserLimit != nil {
		in.PerUserLimit = *req.PerUserLimit
	}
	return in, nil
}

// restockRequest is the POST /api/v1/admin/skus/{sku}/restock body; it is
// checked by catalog.Restock.
type restockRequest struct {
	Quantity  int64  `json:"quantity"`
	RestockID string `json:"restock_id"`
}

func decodeRestock(body []byte) (restockRequest, error) {
	var req restockRequest
	return req, decodeJSON(body, &req)
}

// bucketsRequest is the POST /api/v1/admin/skus/{sku}/buckets body.
type bucketsRequest struct {
	Buckets *int `json:"buckets"`
}

// decodeBuckets reads the new bucket count; catalog.Resize checks its range.
func decodeBuckets(body []byte) (int, error) {
	var req bucketsRequest
	if err := decodeJSON(body, &req); err != nil {
		return 0, err
	}
	if req.Buckets == nil {
		return 0, invalid(fmt.Sprintf("buckets is required, 1-%d", flashsale.MaxBuckets))
	}
	return *req.Buckets, nil
}

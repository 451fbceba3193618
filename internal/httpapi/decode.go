package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/flashsale/flashsale/internal/inventory"
	"github.com/flashsale/flashsale/workflows"
)

// maxBodyBytes caps every request body. The largest legitimate one (an
// order of 20 lines) is under 2 KiB; anything near the cap is an attack or a
// bug, and reading it would cost memory per connection.
const maxBodyBytes = 64 << 10

// Input bounds beyond workflows' (ids, items, quantities).
const (
	maxTxnIDLength = 128
	maxSKUTotal    = 1_000_000_000
	// maxPrice keeps price x MaxItemQuantity x MaxItems far inside int64.
	maxPrice        = 1_000_000_000_000
	maxPerUserLimit = 1_000_000
	defaultBuckets  = 16
)

// readBody reads at most maxBodyBytes; a larger body is a
// *http.MaxBytesError, which classify answers with 413.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, err
		}
		return nil, invalid("could not read the request body")
	}
	return body, nil
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

// validID accepts the ids this API hands to Temporal, Redis and MySQL: 1 to
// max characters of [A-Za-z0-9._:@-], not "." or "..". The narrow alphabet
// keeps out what the layers below treat differently (trailing spaces MySQL
// ignores, braces that break Redis hash tags, control characters, invalid
// UTF-8); the dot segments would be resolved away in a URL path, so an order
// named "." could be created but never read or cancelled.
func validID(s string, max int) bool {
	if len(s) == 0 || len(s) > max || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '_', c == ':', c == '@', c == '-':
		default:
			return false
		}
	}
	return true
}

func checkID(field, v string, max int) error {
	if !validID(v, max) {
		return invalid(fmt.Sprintf("%s must be 1-%d characters of A-Z a-z 0-9 . _ : @ - (not . or ..)", field, max))
	}
	return nil
}

// orderRequest is the POST /api/v1/orders body.
type orderRequest struct {
	// OrderID is optional: a client that sets it can retry safely.
	OrderID *string       `json:"order_id"`
	UserID  string        `json:"user_id"`
	Items   []itemRequest `json:"items"`
}

type itemRequest struct {
	SKU      string `json:"sku_id"`
	Quantity int64  `json:"quantity"`
}

// decodeOrder turns a buy request body into a validated order input. The
// order id is empty when the client did not choose one.
func decodeOrder(body []byte) (workflows.OrderInput, error) {
	var req orderRequest
	if err := decodeJSON(body, &req); err != nil {
		return workflows.OrderInput{}, err
	}
	in := workflows.OrderInput{UserID: req.UserID}
	if req.OrderID != nil {
		if err := checkID("order_id", *req.OrderID, workflows.MaxIDLength); err != nil {
			return workflows.OrderInput{}, err
		}
		in.OrderID = *req.OrderID
	}
	// user_id is optional: the buyer is the token's subject, and a body
	// that names one must name the same (createOrder checks).
	if req.UserID != "" {
		if err := checkID("user_id", req.UserID, workflows.MaxIDLength); err != nil {
			return workflows.OrderInput{}, err
		}
	}
	for _, it := range req.Items {
		if err := checkID("sku_id", it.SKU, workflows.MaxIDLength); err != nil {
			return workflows.OrderInput{}, err
		}
		in.Items = append(in.Items, workflows.Item{SKU: it.SKU, Quantity: it.Quantity})
	}
	// The workflow's own rules (item count, quantities, duplicates), with
	// placeholders for what the server fills in.
	check := in
	if check.OrderID == "" {
		check.OrderID = "placeholder"
	}
	if check.UserID == "" {
		check.UserID = "placeholder"
	}
	if err := workflows.ValidateInput(check); err != nil {
		return workflows.OrderInput{}, invalid(err.Error())
	}
	return in, nil
}

// Callback statuses a payment provider reports.
const (
	callbackSuccess = "SUCCESS"
	callbackFailed  = "FAILED"
)

// callbackRequest is the payment provider's webhook body.
type callbackRequest struct {
	OrderID       string `json:"order_id"`
	TransactionID string `json:"transaction_id"`
	Amount        int64  `json:"amount"`
	Status        string `json:"status"`
}

func decodeCallback(body []byte) (callbackRequest, error) {
	var cb callbackRequest
	if err := decodeJSON(body, &cb); err != nil {
		return callbackRequest{}, err
	}
	if err := checkID("order_id", cb.OrderID, workflows.MaxIDLength); err != nil {
		return callbackRequest{}, err
	}
	if err := checkID("transaction_id", cb.TransactionID, maxTxnIDLength); err != nil {
		return callbackRequest{}, err
	}
	if cb.Amount <= 0 {
		return callbackRequest{}, invalid("amount must be a positive integer in minor units")
	}
	if cb.Status != callbackSuccess && cb.Status != callbackFailed {
		return callbackRequest{}, invalid(`status must be "SUCCESS" or "FAILED"`)
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
}

type skuInput struct {
	Total, Price          int64
	Buckets, PerUserLimit int
}

func decodeSKU(body []byte) (skuInput, error) {
	var req skuRequest
	if err := decodeJSON(body, &req); err != nil {
		return skuInput{}, err
	}
	in := skuInput{Buckets: defaultBuckets, PerUserLimit: 1}
	switch {
	case req.Total == nil || *req.Total < 0 || *req.Total > maxSKUTotal:
		return skuInput{}, invalid(fmt.Sprintf("total is required, 0-%d", maxSKUTotal))
	case req.Price == nil || *req.Price < 0 || *req.Price > maxPrice:
		return skuInput{}, invalid(fmt.Sprintf("price is required, 0-%d minor units", maxPrice))
	}
	in.Total, in.Price = *req.Total, *req.Price
	if req.Buckets != nil {
		in.Buckets = *req.Buckets
	}
	if in.Buckets < 1 || in.Buckets > inventory.MaxBuckets {
		return skuInput{}, invalid(fmt.Sprintf("buckets must be 1-%d", inventory.MaxBuckets))
	}
	if req.PerUserLimit != nil {
		in.PerUserLimit = *req.PerUserLimit
	}
	if in.PerUserLimit < 1 || in.PerUserLimit > maxPerUserLimit {
		return skuInput{}, invalid(fmt.Sprintf("per_user_limit must be 1-%d", maxPerUserLimit))
	}
	return in, nil
}

// restockRequest is the POST /api/v1/admin/skus/{sku}/restock body.
type restockRequest struct {
	Quantity  int64  `json:"quantity"`
	RequestID string `json:"request_id"`
}

func decodeRestock(body []byte) (restockRequest, error) {
	var req restockRequest
	if err := decodeJSON(body, &req); err != nil {
		return restockRequest{}, err
	}
	if req.Quantity < 1 || req.Quantity > maxSKUTotal {
		return restockRequest{}, invalid(fmt.Sprintf("quantity must be 1-%d", maxSKUTotal))
	}
	if err := checkID("request_id", req.RequestID, workflows.MaxIDLength); err != nil {
		return restockRequest{}, err
	}
	return req, nil
}

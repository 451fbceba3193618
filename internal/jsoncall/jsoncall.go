// Package jsoncall sends one JSON request to the flash sale's HTTP API and
// reads its answer, as every client of it here does: the CLI's payment
// callback, the load generator and its crowds, and the tests.
package jsoncall

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// MaxBody is how much of an answer is read: every answer of the API is far
// smaller, and a client must not be made to hold an unbounded one.
const MaxBody = 1 << 20

// Answer is the API's answer: its status, header and body (at most MaxBody).
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends body to url with Content-Type application/json and the fields of
// hdr added, on c. Any answer, whatever its status, is an Answer; the error
// is for a request that got none (or whose body could not be read).
func Do(ctx context.Context, c *http.Client, method, url string, body []byte, hdr http.Header) (Answer, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return Answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody))
	if err != nil {
		return Answer{}, fmt.Errorf("read the answer of %s %s: %w", method, url, err)
	}
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// Code is the API's error code in the answer ({"code": ...}), "" for an
// answer that carries none.
func (a Answer) Code() string {
	var e struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(a.Body, &e)
	return e.Code
}

// Key names the answer as a crowd counts answers: the status, then the
// code when there is one ("201", "409 SOLD_OUT").
func (a Answer) Key() string {
	key := strconv.Itoa(a.Status)
	if code := a.Code(); code != "" {
		key += " " + code
	}
	return key
}

package httpapi

import (
	"encoding/base64"
	"strings"
	"unsafe"

	"github.com/flashsale/flashsale"
)

// The quick sold-out answer's reading of a request, before the strict
// decode and the token's verification: a scanner that understands only
// the plainest buy body and a token's subject, and gives up (the full path
// then answers) on anything else, so it never answers what the full path
// would refuse.

// quickBuy is what the scan found in a buy body. Its strings are views of
// the scanned buffer (view): valid while it is, and never kept.
type quickBuy struct {
	sku, key, user string
	hasKey         bool
	hasUser        bool
}

// view is b as a string without a copy. The quick path uses such strings
// for map lookups and comparisons only, while b is held; none outlives the
// request.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// scanner walks JSON bytes. Every method reports false on anything it does
// not expect.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) byte(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// plainString reads a string without escapes or control characters.
func (s *scanner) plainString() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// quantity reads a JSON integer of 1 to flashsale.MaxItemQuantity.
func (s *scanner) quantity() bool {
	s.ws()
	n, digits := int64(0), 0
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		if digits == 0 && s.b[s.i] == '0' {
			return false
		}
		n = n*10 + int64(s.b[s.i]-'0')
		digits++
		s.i++
		if digits > 4 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return false
	}
	return digits > 0 && n >= 1 && n <= flashsale.MaxItemQuantity
}

// skip passes over any JSON value (for claims the quick path ignores).
func (s *scanner) skip(depth int) bool {
	s.ws()
	if s.i >= len(s.b) || depth > 8 {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		s.i++
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '\\':
				s.i += 2
				continue
			case '"':
				s.i++
				return true
			}
			s.i++
		}
		return false
	case c == '{' || c == '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		s.i++
		if s.byte(end) {
			return true
		}
		for {
			if c == '{' {
				if _, ok := s.objectKey(); !ok {
					return false
				}
			}
			if !s.skip(depth + 1) {
				return false
			}
			if s.byte(end) {
				return true
			}
			if !s.byte(',') {
				return false
			}
		}
	default:
		// A number or a literal: up to the next delimiter.
		start := s.i
		for s.i < len(s.b) && !strings.ContainsRune(",}] \t\r\n", rune(s.b[s.i])) {
			s.i++
		}
		return s.i > start
	}
}

// objectKey reads `"key":`, escapes allowed (for skipping).
func (s *scanner) objectKey() ([]byte, bool) {
	k, ok := s.plainString()
	if !ok || !s.byte(':') {
		return nil, false
	}
	return k, true
}

// end reports whether only whitespace is left.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// scanQuickBuy reads body as a buy of exactly one line, the only shape the
// quick answer takes: {"client_order_id"?, "user_id"?, "items":[{"sku_id",
// "quantity"}]}, each key once, plain strings, every id as
// flashsale.Order.Validate wants it. ok is false for anything else.
func scanQuickBuy(body []byte) (q quickBuy, ok bool) {
	s := scanner{b: body}
	if !s.byte('{') {
		return q, false
	}
	var hasItems bool
	for first := true; ; first = false {
		if s.byte('}') {
			if first {
				return q, false
			}
			break
		}
		if !first && !s.byte(',') {
			return q, false
		}
		k, ok := s.objectKey()
		if !ok {
			return q, false
		}
		switch string(k) {
		case "client_order_id":
			v, ok := s.plainString()
			if !ok || q.hasKey {
				return q, false
			}
			q.key, q.hasKey = view(v), true
		case "user_id":
			v, ok := s.plainString()
			if !ok || q.hasUser {
				return q, false
			}
			q.user, q.hasUser = view(v), true
		case "items":
			if hasItems || !s.scanItem(&q) {
				return q, false
			}
			hasItems = true
		default:
			return q, false
		}
	}
	if !hasItems || !s.end() {
		return q, false
	}
	if q.hasKey && (!flashsale.ValidID(q.key, flashsale.MaxIDLength) || strings.HasPrefix(q.key, flashsale.WaitlistOrderPrefix)) {
		return q, false
	}
	if q.hasUser && !flashsale.ValidID(q.user, flashsale.MaxIDLength) {
		return q, false
	}
	return q, flashsale.ValidID(q.sku, flashsale.MaxIDLength)
}

// scanItem reads `[{"sku_id":..., "quantity":...}]`, one line only.
func (s *scanner) scanItem(q *quickBuy) bool {
	if !s.byte('[') || !s.byte('{') {
		return false
	}
	var hasSKU, hasQty bool
	for first := true; ; first = false {
		if s.byte('}') {
			break
		}
		if !first && !s.byte(',') {
			return false
		}
		k, ok := s.objectKey()
		if !ok {
			return false
		}
		switch string(k) {
		case "sku_id":
			v, ok := s.plainString()
			if !ok || hasSKU {
				return false
			}
			q.sku, hasSKU = view(v), true
		case "quantity":
			if hasQty || !s.quantity() {
				return false
			}
			hasQty = true
		default:
			return false
		}
	}
	return hasSKU && hasQty && s.byte(']')
}

// claimedSubject is the `sub` of a bearer JWT, unverified, decoded into
// buf: only to tell whether the request could repeat an order of that
// buyer, never to answer as them. Empty when there is none to read.
func claimedSubject(authorization string, buf []byte) []byte {
	scheme, token, ok := strings.Cut(authorization, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil
	}
	_, rest, ok := strings.Cut(strings.TrimSpace(token), ".")
	if !ok {
		return nil
	}
	payload, _, ok := strings.Cut(rest, ".")
	if !ok || base64.RawURLEncoding.DecodedLen(len(payload)) > len(buf) {
		return nil
	}
	n, err := base64.RawURLEncoding.Decode(buf, unsafe.Slice(unsafe.StringData(payload), len(payload)))
	if err != nil {
		return nil
	}
	s := scanner{b: buf[:n]}
	if !s.byte('{') || s.byte('}') {
		return nil
	}
	for {
		k, ok := s.objectKey()
		if !ok {
			return nil
		}
		if string(k) == "sub" {
			v, ok := s.plainString()
			if !ok {
				return nil
			}
			return v
		}
		if !s.skip(0) || !s.byte(',') {
			return nil
		}
	}
}

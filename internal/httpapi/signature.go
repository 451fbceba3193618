package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Payment callbacks are signed like this:
//
//	X-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256("<t>.<raw body>")>[,v1=...]
//
// The timestamp is inside the signed text, so an old callback cannot be
// replayed with a fresh t; the tolerance bounds how long a captured one can
// be replayed at all (and a replay is harmless anyway: payments are
// idempotent by transaction id). Several v1 values let a provider sign with
// the old and the new secret while a rotation is under way.
const (
	SignatureHeader    = "X-Signature"
	SignatureTolerance = 5 * time.Minute
)

// Bounds that keep verification cheap whatever a caller sends.
const (
	maxSignatureHeader = 1024
	maxSignatures      = 8
)

// errBadSignature is every way a signature can fail; the wrapped text says
// which, for the caller and the log.
var errBadSignature = errors.New("bad signature")

// Sign returns the X-Signature value for body sent at t.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// VerifySignature checks header against body with every secret. It accepts
// if any v1 value matches any secret and t is within SignatureTolerance of
// now, in either direction (a provider's clock may run ahead). Comparisons
// use hmac.Equal, which takes the same time wherever the bytes differ.
func VerifySignature(header string, body []byte, secrets []string, now time.Time) error {
	if header == "" {
		return fmt.Errorf("%w: missing %s header", errBadSignature, SignatureHeader)
	}
	if len(header) > maxSignatureHeader {
		return fmt.Errorf("%w: header too long", errBadSignature)
	}
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return fmt.Errorf("%w: malformed header", errBadSignature)
		}
		switch k {
		case "t":
			if ts != "" {
				return fmt.Errorf("%w: more than one timestamp", errBadSignature)
			}
			ts = v
		case "v1":
			sig, err := hex.DecodeString(v)
			if err != nil || len(sig) != sha256.Size {
				return fmt.Errorf("%w: malformed v1 signature", errBadSignature)
			}
			if len(sigs) == maxSignatures {
				return fmt.Errorf("%w: more than %d signatures", errBadSignature, maxSignatures)
			}
			sigs = append(sigs, sig)
		default:
			// Other schemes (v0, a future v2) are ignored, so a provider
			// can add one without breaking this receiver.
		}
	}
	if ts == "" || len(sigs) == 0 {
		return fmt.Errorf("%w: need t= and at least one v1=", errBadSignature)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	// Only the canonical form: "t=0123" or "t=+123" would sign a different
	// text than the number it stands for.
	if err != nil || sec <= 0 || strconv.FormatInt(sec, 10) != ts {
		return fmt.Errorf("%w: malformed timestamp", errBadSignature)
	}
	// Compared in seconds so no arithmetic on an attacker's number can
	// overflow a Duration.
	if d := now.Unix() - sec; d > int64(SignatureTolerance/time.Second) || d < -int64(SignatureTolerance/time.Second) {
		return fmt.Errorf("%w: timestamp outside the %v tolerance", errBadSignature, SignatureTolerance)
	}
	ok := false
	for _, secret := range secrets {
		want := mac(secret, ts, body)
		for _, sig := range sigs {
			// No early exit: the time taken does not tell which matched.
			if hmac.Equal(want, sig) {
				ok = true
			}
		}
	}
	if !ok {
		return fmt.Errorf("%w: no signature matches", errBadSignature)
	}
	return nil
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/httpapi"
	"github.com/flashsale/flashsale/internal/jsoncall"
)

// webhookTimeout bounds the whole call; the API itself answers a payment
// within ~10 s or says 503.
const webhookTimeout = 30 * time.Second

// payViaAPI plays the payment provider: it signs the callback with the
// current (first) secret of WEBHOOK_SECRET and POSTs it to the API, so the
// signature check, the JSON decoding and the answer mapping are exercised
// exactly as a provider's call would be. The API's JSON answer is the
// output; an error answer becomes this command's error with the API's code.
func payViaAPI(ctx context.Context, base string, cb httpapi.Callback) (any, error) {
	if cb.Status != httpapi.CallbackSuccess && cb.Status != httpapi.CallbackFailed {
		return nil, usageError("--status must be SUCCESS or FAILED")
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageError(fmt.Sprintf("--via-api %q: want a URL such as http://localhost:8080", base))
	}
	secrets, err := httpapi.ParseSecrets(os.Getenv("WEBHOOK_SECRET"))
	if err != nil {
		return nil, invalid("WEBHOOK_SECRET: %v", err)
	}
	body, err := json.Marshal(cb)
	if err != nil {
		return nil, fmt.Errorf("encode callback: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, webhookTimeout)
	defer cancel()
	endpoint := strings.TrimRight(u.String(), "/") + "/api/v1/payments/callback"
	res, err := jsoncall.Do(ctx, http.DefaultClient, http.MethodPost, endpoint, body,
		http.Header{httpapi.SignatureHeader: {httpapi.Sign(secrets[0], time.Now(), body)}})
	if err != nil {
		return nil, fmt.Errorf("post callback to %s: %w", endpoint, err)
	}
	status := fmt.Sprintf("%d %s", res.Status, http.StatusText(res.Status))
	if res.Status >= 300 {
		// The API's {code, message}, passed on as the coded error it is.
		var apiErr flashsale.Error
		if err := json.Unmarshal(res.Body, &apiErr); err != nil || apiErr.Code == "" {
			return nil, fmt.Errorf("callback answered %s: %q", status, res.Body)
		}
		return nil, fmt.Errorf("callback answered %s: %w", status, &apiErr)
	}
	var out map[string]any
	if err := json.Unmarshal(res.Body, &out); err != nil {
		return nil, errors.Join(fmt.Errorf("callback answered %s with non-JSON %q", status, res.Body), err)
	}
	return out, nil
}

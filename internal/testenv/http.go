package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/flashsale/flashsale/internal/jsoncall"
)

// CallJSON calls an endpoint of a running API with the bearer token: in
// sent as JSON, a 200's body decoded into out. Any other status is an error
// carrying the body. It fails no test, so it may run off the test's
// goroutine.
func CallJSON(method, url, token string, in, out any) error {
	raw, err := json.Marshal(in)
	if err != nil {
		return err
	}
	res, err := jsoncall.Do(context.Background(), http.DefaultClient, method, url, raw,
		http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		return err
	}
	if res.Status != http.StatusOK {
		return fmt.Errorf("%d %s %s", res.Status, http.StatusText(res.Status), res.Body)
	}
	if err := json.Unmarshal(res.Body, out); err != nil {
		return fmt.Errorf("decode %s: %w", res.Body, err)
	}
	return nil
}

package testenv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
	req, err := http.NewRequest(method, url, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s", resp.Status, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decode %s: %w", b, err)
	}
	return nil
}

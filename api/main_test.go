//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale"
	"github.com/flashsale/flashsale/internal/testenv"
)

// These tests run the real binaries: the api with its environment, a
// worker, and the starter playing the payment provider.

var bin string

func TestMain(m *testing.M) {
	os.Exit(testenv.MainWithCommands(m.Run, &bin, "", ".", "../worker", "../starter"))
}

const (
	secret      = "whsec-bin-0123456789abcdef"
	admin       = "admin-bin-0123456789abcdef"
	buyerSecret = "buyer-bin-0123456789abcdef-0123456789"
)

// start runs a binary until the test ends, then stops it with SIGTERM.
func start(t *testing.T, env []string, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Env = env
	var logs bytes.Buffer
	cmd.Stderr = &logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(40 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", name, logs.String())
		}
	})
	return cmd
}

func runBin(env []string, name string, args ...string) (stdout, stderr string, err error) {
	o, e, err := testenv.RunCommand(context.Background(), env, bin, name, args...)
	return string(o), string(e), err
}

func TestRefusesToStartWithoutSecrets(t *testing.T) {
	env := append(os.Environ(), "WEBHOOK_SECRET=", "ADMIN_TOKEN=", "BUYER_JWT_SECRET=", "BUYER_JWKS_URL=", "HTTP_ADDR="+testenv.FreeAddr(t))
	_, stderr, err := runBin(env, "api")
	require.Error(t, err)
	require.Contains(t, stderr, "WEBHOOK_SECRET")
	require.Contains(t, stderr, "ADMIN_TOKEN")
	require.Contains(t, stderr, "BUYER_JWT_SECRET or BUYER_JWKS_URL must be set")
}

func TestBinariesEndToEnd(t *testing.T) {
	id := testenv.UniqueID(t)
	addr := testenv.FreeAddr(t)
	env := append(os.Environ(),
		"MYSQL_DSN="+testenv.MySQLDSN(t),
		"REDIS_ADDR="+testenv.RedisAddr(),
		"TEMPORAL_ADDRESS="+testenv.TemporalAddress(),
		"TASK_QUEUE=api-bin-"+id,
		"HTTP_ADDR="+addr,
		// Rotation under way: the starter signs with the first secret.
		"WEBHOOK_SECRET="+secret+",whsec-previous-0123456789ab",
		"ADMIN_TOKEN="+admin,
		"BUYER_JWT_SECRET="+buyerSecret,
	)
	start(t, env, "worker")
	api := start(t, env, "api")
	require.Eventually(t, func() bool {
		_, _, err := runBin(env, "api", "-healthcheck")
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "api -healthcheck reports ready")

	base := "http://" + addr
	sku := "bin-" + id
	call := func(method, path, body string, header http.Header) (int, map[string]any) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var out map[string]any
		require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
		return resp.StatusCode, out
	}
	status, _ := call(http.MethodPut, "/api/v1/admin/skus/"+sku, `{"total":3,"price":1250,"buckets":2}`,
		http.Header{"Authorization": {"Bearer " + admin}})
	require.Equal(t, http.StatusOK, status)
	// The buy request's client_order_id is the buyer's key; the order's id is
	// derived from it and the buyer.
	order := flashsale.BuyerOrderID("bin-u-"+id, "bin-o-"+id)
	body := `{"client_order_id":"bin-o-` + id + `","items":[{"sku_id":"` + sku + `","quantity":1}]}`
	status, out := call(http.MethodPost, "/api/v1/orders", body, nil)
	require.Equal(t, http.StatusUnauthorized, status, "no token: %v", out)
	require.Equal(t, "UNAUTHENTICATED", out["code"])

	// The buyer's token, as `starter token` mints it for the same secret.
	stdout, stderr, err := runBin(env, "starter", "token", "--user", "bin-u-"+id)
	require.NoError(t, err, stderr)
	var tok struct {
		UserID string `json:"user_id"`
		Token  string `json:"token"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &tok))
	require.Equal(t, "bin-u-"+id, tok.UserID)
	buyer := http.Header{"Authorization": {"Bearer " + tok.Token}}
	status, out = call(http.MethodPost, "/api/v1/orders", body, buyer)
	require.Equal(t, http.StatusCreated, status, "%v", out)
	status, out = call(http.MethodGet, "/api/v1/orders/"+order, "", buyer)
	require.Equal(t, http.StatusOK, status, "%v", out)
	require.Equal(t, "bin-u-"+id, out["user_id"])

	// The starter as payment provider, through the signed webhook.
	_, stderr, err = runBin(env, "starter", "pay", "--via-api", base, "--order", order, "--txn", "bin-short-"+id, "--amount", "1")
	require.Error(t, err)
	require.Contains(t, stderr, `"code":"AMOUNT_MISMATCH"`)
	stdout, stderr, err = runBin(env, "starter", "pay", "--via-api", base, "--order", order, "--txn", "bin-tx-"+id, "--amount", "1250")
	require.NoError(t, err, stderr)
	require.JSONEq(t, `{"order_id":"`+order+`","status":"PAID"}`, stdout)
	stdout, _, err = runBin(env, "starter", "pay", "--via-api", base, "--order", order, "--txn", "bin-tx-"+id, "--amount", "1250")
	require.NoError(t, err)
	require.JSONEq(t, `{"order_id":"`+order+`","status":"PAID"}`, stdout, "a repeat gets the same answer")
	wrong := append(env, "WEBHOOK_SECRET=whsec-not-the-servers-secret")
	stdout, stderr, err = runBin(wrong, "starter", "pay", "--via-api", base, "--order", order, "--txn", "bin-tx-"+id, "--amount", "1250")
	require.Error(t, err, "stdout %s stderr %s", stdout, stderr)
	require.Contains(t, stderr, `"code":"BAD_SIGNATURE"`)

	status, out = call(http.MethodGet, "/api/v1/inventory/"+sku, "", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, float64(1), out["sold"])

	// SIGTERM: the api drains and exits cleanly.
	require.NoError(t, api.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() { exited <- api.Wait() }()
	select {
	case err := <-exited:
		require.NoError(t, err, "clean exit on SIGTERM")
	case <-time.After(30 * time.Second):
		t.Fatal("api did not stop on SIGTERM")
	}
	_, _, err = runBin(env, "api", "-healthcheck")
	require.Error(t, err, "nothing answers once stopped")
}

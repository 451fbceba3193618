//go:build integration

package backend

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/flashsale/flashsale/internal/config"
	"github.com/flashsale/flashsale/internal/testenv"
)

// tlsFront is a TLS terminator in front of the real Temporal dev server
// (which serves plaintext only): it requires a client certificate signed by
// the test CA, forwards the decrypted gRPC stream, and reads the HTTP/2
// headers going in, so the test sees the API key on the wire.
type tlsFront struct {
	addr     string
	upstream string // the dev server

	mu      sync.Mutex
	clients []string // client certificate CNs of completed handshakes
	auth    []string // authorization header values seen
}

func startTLSFront(t *testing.T, pki testenv.PKI) *tlsFront {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(pki.ServerCert, pki.ServerKey)
	require.NoError(t, err)
	caPEM, err := os.ReadFile(pki.CA)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert,
		NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12,
	})
	require.NoError(t, err)
	// Read before the test points TEMPORAL_ADDRESS at the front itself.
	f := &tlsFront{addr: ln.Addr().String(), upstream: testenv.TemporalAddress()}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { f.serve(t, c.(*tls.Conn)) })
		}
	})
	return f
}

func (f *tlsFront) serve(t *testing.T, c *tls.Conn) {
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.HandshakeContext(ctx); err != nil {
		t.Logf("tls front: handshake: %v", err)
		return // refused: no or a wrong client certificate
	}
	if peers := c.ConnectionState().PeerCertificates; len(peers) > 0 {
		f.mu.Lock()
		f.clients = append(f.clients, peers[0].Subject.CommonName)
		f.mu.Unlock()
	}
	up, err := net.Dial("tcp", f.upstream)
	if err != nil {
		t.Errorf("dial the dev server: %v", err)
		return
	}
	defer up.Close()
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	wg.Go(func() { f.readHeaders(pr) })
	wg.Go(func() {
		_, _ = io.Copy(up, io.TeeReader(c, pw))
		pw.Close()
		_ = up.(*net.TCPConn).CloseWrite()
	})
	_, _ = io.Copy(c, up)
	c.Close()
	wg.Wait()
}

// readHeaders decodes the client's HTTP/2 frames and notes authorization
// headers; it always drains r, so the proxy never stalls on it.
func (f *tlsFront) readHeaders(r io.Reader) {
	defer func() { _, _ = io.Copy(io.Discard, r) }()
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(r, preface); err != nil {
		return
	}
	fr := http2.NewFramer(io.Discard, r)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	for {
		frame, err := fr.ReadFrame()
		if err != nil {
			return
		}
		if mh, ok := frame.(*http2.MetaHeadersFrame); ok {
			for _, h := range mh.Fields {
				if h.Name == "authorization" {
					f.mu.Lock()
					f.auth = append(f.auth, h.Value)
					f.mu.Unlock()
				}
			}
		}
	}
}

func (f *tlsFront) seen() (clients, auth []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.clients...), append([]string(nil), f.auth...)
}

// TestTemporalOverTLS connects to the real dev server through a TLS
// terminator with the settings a Temporal Cloud or secured cluster
// deployment uses, read from the environment by config.Load: mTLS with a
// private CA and a server name, and an API key. The client's calls work,
// the terminator saw the client certificate and the key as a bearer token,
// and without the TLS settings the same address refuses the client.
func TestTemporalOverTLS(t *testing.T) {
	pki := testenv.NewPKI(t, t.TempDir())
	front := startTLSFront(t, pki)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	t.Setenv("TEMPORAL_ADDRESS", front.addr)
	t.Setenv("TEMPORAL_NAMESPACE", config.DefaultNamespace)
	t.Setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", pki.ClientCert)
	t.Setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", pki.ClientKey)
	t.Setenv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", pki.CA)
	t.Setenv("TEMPORAL_TLS_SERVER_NAME", testenv.PKIServerName)
	t.Setenv("TEMPORAL_API_KEY", "test-api-key-not-a-secret")
	cfg, err := config.Load()
	require.NoError(t, err)
	require.True(t, cfg.Temporal.TLS())

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, TemporalOptions(cfg, logger, nil))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
	require.NoError(t, err)
	ns, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: cfg.TemporalNamespace})
	require.NoError(t, err)
	require.Equal(t, cfg.TemporalNamespace, ns.GetNamespaceInfo().GetName())

	clients, auth := front.seen()
	require.Contains(t, clients, "flashsale-test-client")
	require.Contains(t, auth, "Bearer test-api-key-not-a-secret")

	// The same front without the client's TLS settings: no connection.
	plain := cfg
	plain.Temporal = config.TemporalClient{}
	short, cancelShort := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancelShort()
	_, err = client.DialContext(short, TemporalOptions(plain, logger, nil))
	require.Error(t, err, "plaintext to a TLS endpoint must fail")

	// And with TLS but a server name the certificate does not carry.
	t.Setenv("TEMPORAL_TLS_SERVER_NAME", "someone-else.test")
	wrong, err := config.Load()
	require.NoError(t, err)
	_, err = client.DialContext(short, TemporalOptions(wrong, logger, nil))
	require.Error(t, err)
	var unknown x509.HostnameError
	if !errors.As(err, &unknown) {
		require.Contains(t, err.Error(), "certificate")
	}
}

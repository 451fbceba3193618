package config

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flashsale/flashsale/internal/testenv"
)

// mapEnv is an environment that can also be listed, as the process's can
// (TEMPORAL_GRPC_META_* are found by listing).
type mapEnv map[string]string

func (m mapEnv) Environ() []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

func (m mapEnv) LookupEnv(k string) (string, bool) {
	v, ok := m[k]
	return v, ok && v != ""
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func TestLoadTemporal(t *testing.T) {
	t.Run("nothing set: the dev server's plaintext", func(t *testing.T) {
		addr, ns, tc, err := loadTemporal(mapEnv{})
		require.NoError(t, err)
		require.Equal(t, DefaultTemporalAddress, addr)
		require.Equal(t, DefaultNamespace, ns)
		require.False(t, tc.TLS())
		require.False(t, tc.APIKey)
		o := tc.Options()
		require.Nil(t, o.Credentials)
		require.Nil(t, o.HeadersProvider)
		require.False(t, o.ConnectionOptions.TLSDisabled)
	})
	t.Run("an API key implies TLS", func(t *testing.T) {
		addr, ns, tc, err := loadTemporal(mapEnv{
			"TEMPORAL_ADDRESS": "ns.acct.tmprl.cloud:7233", "TEMPORAL_NAMESPACE": "ns.acct", "TEMPORAL_API_KEY": "key-123",
		})
		require.NoError(t, err)
		require.Equal(t, "ns.acct.tmprl.cloud:7233", addr)
		require.Equal(t, "ns.acct", ns)
		require.True(t, tc.TLS())
		require.True(t, tc.APIKey)
		require.NotNil(t, tc.Options().Credentials)
		// System roots, the server's own name: what Temporal Cloud wants.
		require.Nil(t, tc.Options().ConnectionOptions.TLS.RootCAs)
		require.False(t, tc.Options().ConnectionOptions.TLS.InsecureSkipVerify)
	})
	t.Run("an API key without TLS when TEMPORAL_TLS=false", func(t *testing.T) {
		_, _, tc, err := loadTemporal(mapEnv{"TEMPORAL_API_KEY": "key-123", "TEMPORAL_TLS": "false"})
		require.NoError(t, err)
		require.False(t, tc.TLS())
		require.True(t, tc.Options().ConnectionOptions.TLSDisabled)
		require.NotNil(t, tc.Options().Credentials)
	})
	t.Run("TEMPORAL_TLS=true alone", func(t *testing.T) {
		_, _, tc, err := loadTemporal(mapEnv{"TEMPORAL_TLS": "true"})
		require.NoError(t, err)
		require.True(t, tc.TLS())
		require.False(t, tc.APIKey)
		require.Nil(t, tc.Options().Credentials)
	})
	t.Run("mTLS, CA, server name, host verification", func(t *testing.T) {
		pki := testenv.NewPKI(t, t.TempDir())
		_, _, tc, err := loadTemporal(mapEnv{
			"TEMPORAL_TLS_CLIENT_CERT_PATH":          pki.ClientCert,
			"TEMPORAL_TLS_CLIENT_KEY_PATH":           pki.ClientKey,
			"TEMPORAL_TLS_SERVER_CA_CERT_PATH":       pki.CA,
			"TEMPORAL_TLS_SERVER_NAME":               "temporal.internal",
			"TEMPORAL_TLS_DISABLE_HOST_VERIFICATION": "true",
		})
		require.NoError(t, err)
		c := tc.Options().ConnectionOptions.TLS
		require.NotNil(t, c)
		require.Len(t, c.Certificates, 1)
		require.NotNil(t, c.RootCAs)
		require.Equal(t, "temporal.internal", c.ServerName)
		require.True(t, c.InsecureSkipVerify)
	})
	t.Run("gRPC metadata", func(t *testing.T) {
		_, _, tc, err := loadTemporal(mapEnv{"TEMPORAL_GRPC_META_X_TENANT": "shop-1"})
		require.NoError(t, err)
		h, err := tc.Options().HeadersProvider.GetHeaders(t.Context())
		require.NoError(t, err)
		require.Equal(t, map[string]string{"x-tenant": "shop-1"}, h)
	})
	t.Run("a profile file, overridden by the environment", func(t *testing.T) {
		file := writeFile(t, "temporal.toml", `
[profile.default]
address = "file-host:7233"
namespace = "file-ns"

[profile.cloud]
address = "cloud-host:7233"
namespace = "cloud-ns"
api_key = "from-file"
`)
		addr, ns, tc, err := loadTemporal(mapEnv{"TEMPORAL_CONFIG_FILE": file})
		require.NoError(t, err)
		require.Equal(t, "file-host:7233", addr)
		require.Equal(t, "file-ns", ns)
		require.False(t, tc.TLS())

		addr, ns, tc, err = loadTemporal(mapEnv{"TEMPORAL_CONFIG_FILE": file, "TEMPORAL_PROFILE": "cloud", "TEMPORAL_NAMESPACE": "env-ns"})
		require.NoError(t, err)
		require.Equal(t, "cloud-host:7233", addr)
		require.Equal(t, "env-ns", ns)
		require.True(t, tc.TLS(), "the file's API key implies TLS")
		require.True(t, tc.APIKey)

		_, _, _, err = loadTemporal(mapEnv{"TEMPORAL_CONFIG_FILE": file, "TEMPORAL_PROFILE": "nope"})
		require.ErrorContains(t, err, "nope")
	})

	pki := testenv.NewPKI(t, t.TempDir())
	bad := []struct {
		name string
		env  mapEnv
		want []string
	}{
		{"client cert path missing", mapEnv{"TEMPORAL_TLS_CLIENT_CERT_PATH": "/nonexistent/client.pem", "TEMPORAL_TLS_CLIENT_KEY_PATH": pki.ClientKey},
			[]string{"TEMPORAL_TLS_CLIENT_CERT_PATH", "/nonexistent/client.pem", "no such file"}},
		{"key path missing", mapEnv{"TEMPORAL_TLS_CLIENT_CERT_PATH": pki.ClientCert, "TEMPORAL_TLS_CLIENT_KEY_PATH": "/nonexistent/key.pem"},
			[]string{"TEMPORAL_TLS_CLIENT_KEY_PATH", "no such file"}},
		{"CA path missing", mapEnv{"TEMPORAL_TLS_SERVER_CA_CERT_PATH": "/nonexistent/ca.pem"},
			[]string{"TEMPORAL_TLS_SERVER_CA_CERT_PATH", "no such file"}},
		{"cert without key", mapEnv{"TEMPORAL_TLS_CLIENT_CERT_PATH": pki.ClientCert},
			[]string{"TEMPORAL_TLS_", "other must be present"}},
		{"key that does not match the cert", mapEnv{"TEMPORAL_TLS_CLIENT_CERT_PATH": pki.ClientCert, "TEMPORAL_TLS_CLIENT_KEY_PATH": pki.ServerKey},
			[]string{"TEMPORAL_TLS_", "private key does not match"}},
		{"CA file that is not PEM", mapEnv{"TEMPORAL_TLS_SERVER_CA_CERT_PATH": writeFile(t, "ca.pem", "not a certificate")},
			[]string{"TEMPORAL_TLS_", "CA"}},
		{"TEMPORAL_TLS not a bool", mapEnv{"TEMPORAL_TLS": "yes"}, []string{"TEMPORAL_TLS=\"yes\""}},
		{"host verification not a bool", mapEnv{"TEMPORAL_TLS_DISABLE_HOST_VERIFICATION": "maybe"}, []string{"TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"}},
		{"config file missing", mapEnv{"TEMPORAL_CONFIG_FILE": "/nonexistent/temporal.toml"}, []string{"TEMPORAL_CONFIG_FILE", "no such file"}},
		{"remote codec", mapEnv{"TEMPORAL_CODEC_ENDPOINT": "https://codec"}, []string{"TEMPORAL_CODEC_ENDPOINT"}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, _, _, err := loadTemporal(tt.env)
			require.Error(t, err)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestLoadReadsTemporalSettings: the process's Config carries them, and a
// bad one fails Load like any other variable.
func TestLoadReadsTemporalSettings(t *testing.T) {
	cfg, err := load(func(k string) string {
		return map[string]string{"TEMPORAL_ADDRESS": "h:7233", "TEMPORAL_API_KEY": "sekret-api-key"}[k]
	})
	require.NoError(t, err)
	require.Equal(t, "h:7233", cfg.TemporalAddress)
	require.True(t, cfg.Temporal.TLS())
	require.True(t, cfg.Temporal.APIKey)
	require.NotContains(t, fmt.Sprintf("%+v %#v", cfg, cfg), "sekret-api-key", "the key never prints")

	_, err = load(func(k string) string {
		return map[string]string{"TEMPORAL_TLS_SERVER_CA_CERT_PATH": "/nonexistent/ca.pem"}[k]
	})
	require.ErrorContains(t, err, "TEMPORAL_TLS_SERVER_CA_CERT_PATH")
}

// TestTestPKI keeps the helper honest: its server certificate verifies
// against its CA under its name.
func TestTestPKI(t *testing.T) {
	pki := testenv.NewPKI(t, t.TempDir())
	_, err := tls.LoadX509KeyPair(pki.ServerCert, pki.ServerKey)
	require.NoError(t, err)
}

package config

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
)

// TemporalClient is how to reach Temporal beyond its address and
// namespace: TLS (mTLS or server-verified), an API key, gRPC metadata. The
// zero value is plaintext without credentials, the dev server's way.
// backend.Connect puts it on the client's options.
//
// It is read with the Temporal SDK's envconfig package, so the variables
// mean what they mean to the temporal CLI and every other SDK:
// TEMPORAL_API_KEY (implies TLS unless TEMPORAL_TLS=false), TEMPORAL_TLS,
// TEMPORAL_TLS_CLIENT_CERT_PATH / _KEY_PATH (or _DATA), TEMPORAL_TLS_SERVER_CA_CERT_PATH
// (or _DATA), TEMPORAL_TLS_SERVER_NAME, TEMPORAL_TLS_DISABLE_HOST_VERIFICATION and
// TEMPORAL_GRPC_META_<NAME>. A TOML profile is read only when TEMPORAL_CONFIG_FILE
// or TEMPORAL_PROFILE names one (the SDK would also read
// ~/.config/temporalio/temporal.toml unasked; a server process should not
// pick up a developer's file by accident). The environment overrides the
// file, as in the SDK.
type TemporalClient struct {
	// options holds the TLS settings (nil TLS: plaintext), the API key as
	// opaque credentials (so printing a Config never shows it) and the
	// TEMPORAL_GRPC_META_* headers.
	options client.Options
	// APIKey tells whether an API key is set, for the start-up log line.
	APIKey bool
}

// TLS tells whether the client dials with TLS.
func (t TemporalClient) TLS() bool { return t.options.ConnectionOptions.TLS != nil }

// Options returns client options with the connection settings applied;
// the caller sets HostPort, Namespace and the rest.
func (t TemporalClient) Options() client.Options {
	return client.Options{
		ConnectionOptions: t.options.ConnectionOptions,
		Credentials:       t.options.Credentials,
		HeadersProvider:   t.options.HeadersProvider,
	}
}

// env is what loadTemporal reads: the SDK's EnvLookup.
type env = envconfig.EnvLookup

// getenvLookup adapts a getenv function; an empty value is unset, as for
// every other variable here. It cannot list variables, so it sees no
// TEMPORAL_GRPC_META_*; Load uses the real environment, which can.
type getenvLookup func(string) string

func (g getenvLookup) Environ() []string { return nil }

func (g getenvLookup) LookupEnv(k string) (string, bool) {
	v := g(k)
	return v, v != ""
}

// osLookup is the process environment, empty values treated as unset.
type osLookup struct{}

func (osLookup) Environ() []string { return os.Environ() }

func (osLookup) LookupEnv(k string) (string, bool) {
	v := os.Getenv(k)
	return v, v != ""
}

// pathVars are the TLS variables naming files: each is opened here, so a
// typo fails at start naming the variable, not as a handshake error later.
var pathVars = []string{
	"TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_SERVER_CA_CERT_PATH", "TEMPORAL_CONFIG_FILE",
}

// boolVars are parsed by the SDK, which silently ignores a value it does
// not understand; here that is an error.
var boolVars = []string{"TEMPORAL_TLS", "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"}

// loadTemporal reads the Temporal client settings: the address and
// namespace (defaults DefaultTemporalAddress and DefaultNamespace) and the
// connection (TemporalClient).
func loadTemporal(e env) (address, namespace string, tc TemporalClient, err error) {
	var errs []error
	for _, k := range pathVars {
		if p, ok := e.LookupEnv(k); ok {
			if f, err := os.Open(p); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", k, p, err))
			} else {
				_ = f.Close() // opened only to prove it is readable
			}
		}
	}
	for _, k := range boolVars {
		if v, ok := e.LookupEnv(k); ok {
			switch strings.ToLower(v) {
			case "1", "0", "true", "false":
			default:
				errs = append(errs, fmt.Errorf("%s=%q: want true or false", k, v))
			}
		}
	}
	if _, ok := e.LookupEnv("TEMPORAL_CODEC_ENDPOINT"); ok {
		// A remote codec on a worker is called for every payload, replay
		// included: not something to switch on from the environment.
		errs = append(errs, errors.New("TEMPORAL_CODEC_ENDPOINT: a remote payload codec is not supported"))
	}
	if err := errors.Join(errs...); err != nil {
		return "", "", TemporalClient{}, err
	}
	_, file := e.LookupEnv("TEMPORAL_CONFIG_FILE")
	_, profile := e.LookupEnv("TEMPORAL_PROFILE")
	prof, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{
		DisableFile: !file && !profile,
		EnvLookup:   e,
	})
	if err != nil {
		return "", "", TemporalClient{}, fmt.Errorf("temporal client settings (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE): %w", err)
	}
	opts, err := prof.ToClientOptions(envconfig.ToClientOptionsRequest{})
	if err != nil {
		return "", "", TemporalClient{}, fmt.Errorf("temporal client settings (TEMPORAL_TLS_*, TEMPORAL_API_KEY): %w", err)
	}
	address, namespace = opts.HostPort, opts.Namespace
	if address == "" {
		address = DefaultTemporalAddress
	}
	if namespace == "" {
		namespace = DefaultNamespace
	}
	return address, namespace, TemporalClient{
		options: client.Options{
			ConnectionOptions: opts.ConnectionOptions, Credentials: opts.Credentials, HeadersProvider: opts.HeadersProvider,
		},
		APIKey: prof.APIKey != "",
	}, nil
}

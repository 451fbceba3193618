package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a throwaway certificate authority with one server and one client
// certificate, as PEM files in a directory, for tests of TLS and mTLS
// settings. Nothing here is a secret: it is made per test and deleted.
type PKI struct {
	CA                    string // the CA certificate
	ServerCert, ServerKey string // for ServerName and 127.0.0.1
	ClientCert, ClientKey string // client authentication, CN "flashsale-test-client"
}

// PKIServerName is the DNS name on the server certificate.
const PKIServerName = "temporal.flashsale.test"

// NewPKI writes a fresh PKI into dir.
func NewPKI(t testing.TB, dir string) PKI {
	t.Helper()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "flashsale test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("ca certificate: %v", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatalf("parse ca certificate: %v", err)
	}
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage, dns []string, ips []net.IP) ([]byte, *ecdsa.PrivateKey) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			DNSNames: dns, IPAddresses: ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatalf("certificate %s: %v", cn, err)
		}
		return der, key
	}
	serverDER, serverKey := leaf(2, PKIServerName, x509.ExtKeyUsageServerAuth, []string{PKIServerName}, []net.IP{net.IPv4(127, 0, 0, 1)})
	clientDER, clientKey := leaf(3, "flashsale-test-client", x509.ExtKeyUsageClientAuth, nil, nil)

	p := PKI{
		CA:         filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem"),
	}
	writePEM(t, p.CA, "CERTIFICATE", caDER)
	writePEM(t, p.ServerCert, "CERTIFICATE", serverDER)
	writePEM(t, p.ServerKey, "PRIVATE KEY", marshalKey(t, serverKey))
	writePEM(t, p.ClientCert, "CERTIFICATE", clientDER)
	writePEM(t, p.ClientKey, "PRIVATE KEY", marshalKey(t, clientKey))
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("key: %v", err)
	}
	return k
}

func marshalKey(t testing.TB, k *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatalf("marshal key: %v", err)
	}
	return der
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

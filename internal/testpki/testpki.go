// Package testpki makes a throwaway certificate authority for tests: a
// server certificate for the loopback addresses and a client certificate,
// generated per test so that no key is ever committed. Every PEM is also
// written to a file, as operators' configurations refer to them.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
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

// ClientCommonName is the common name of the client certificate.
const ClientCommonName = "probegate"

// ServerName is the DNS name the server certificate is valid for, besides
// the loopback addresses, for tests of a client's TLS server name.
const ServerName = "backend.probegate.test"

// PKI is a CA with one server and one client certificate.
type PKI struct {
	CAPool *x509.CertPool
	Server tls.Certificate

	CAPEM, ServerPEM, ServerKeyPEM, ClientPEM, ClientKeyPEM      string
	CAFile, ServerFile, ServerKeyFile, ClientFile, ClientKeyFile string
}

// New generates a PKI valid for an hour around now and writes its files
// into a temporary directory of the test.
func New(t testing.TB) *PKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "probegate test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(serial int64, usage x509.ExtKeyUsage, name string) (certPEM, keyPEM string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		template := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
			DNSNames:     []string{ServerName},
		}
		der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
			string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	}
	p := &PKI{CAPool: x509.NewCertPool()}
	p.CAPool.AddCert(ca)
	p.CAPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
	p.ServerPEM, p.ServerKeyPEM = issue(2, x509.ExtKeyUsageServerAuth, "backend")
	if p.Server, err = tls.X509KeyPair([]byte(p.ServerPEM), []byte(p.ServerKeyPEM)); err != nil {
		t.Fatal(err)
	}
	p.ClientPEM, p.ClientKeyPEM = issue(3, x509.ExtKeyUsageClientAuth, ClientCommonName)
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	p.CAFile = write("ca.pem", p.CAPEM)
	p.ServerFile = write("server.pem", p.ServerPEM)
	p.ServerKeyFile = write("server-key.pem", p.ServerKeyPEM)
	p.ClientFile = write("client.pem", p.ClientPEM)
	p.ClientKeyFile = write("client-key.pem", p.ClientKeyPEM)
	return p
}

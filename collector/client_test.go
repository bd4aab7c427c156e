package collector

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	stdlog "log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/config"
)

// clientTestPKI is a throwaway CA with a server certificate for the
// loopback addresses and a client certificate, generated per test so no
// key is ever committed. The CA and the client pair are also written to
// files, as an operator's http_client_config refers to them.
type clientTestPKI struct {
	caPool               *x509.CertPool
	server               tls.Certificate
	caPEM                string
	clientPEM, clientKey string
	caFile               string
	clientFile, keyFile  string
}

func clientTestNewPKI(t *testing.T) *clientTestPKI {
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
	p := &clientTestPKI{caPool: x509.NewCertPool()}
	p.caPool.AddCert(ca)
	p.caPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
	serverPEM, serverKey := issue(2, x509.ExtKeyUsageServerAuth, "backend")
	if p.server, err = tls.X509KeyPair([]byte(serverPEM), []byte(serverKey)); err != nil {
		t.Fatal(err)
	}
	p.clientPEM, p.clientKey = issue(3, x509.ExtKeyUsageClientAuth, "probegate")
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	p.caFile = write("ca.pem", p.caPEM)
	p.clientFile = write("client.pem", p.clientPEM)
	p.keyFile = write("client-key.pem", p.clientKey)
	return p
}

// clientTestMTLSServer is a loopback backend that demands a client
// certificate signed by the test CA.
func clientTestMTLSServer(t *testing.T, pki *clientTestPKI) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != "probegate" {
			w.WriteHeader(http.StatusForbidden)
		}
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{pki.server},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pki.caPool,
	}
	srv.Config.ErrorLog = stdlog.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func clientTestProbe(t *testing.T, hc config.HTTPClientConfig, url string) Result {
	t.Helper()
	client, err := NewHTTPClient("test", hc)
	if err != nil {
		t.Fatal(err)
	}
	defer client.CloseIdleConnections()
	return Probe(context.Background(), client, url, 2*time.Second)
}

func TestHTTPClientPresentsClientCertificate(t *testing.T) {
	pki := clientTestNewPKI(t)
	srv := clientTestMTLSServer(t, pki)
	cases := []struct {
		name string
		tls  commoncfg.TLSConfig
		ok   bool
	}{
		{"no client certificate", commoncfg.TLSConfig{CAFile: pki.caFile}, false},
		{"backend certificate not trusted", commoncfg.TLSConfig{CertFile: pki.clientFile, KeyFile: pki.keyFile}, false},
		{"client certificate from files", commoncfg.TLSConfig{CAFile: pki.caFile, CertFile: pki.clientFile, KeyFile: pki.keyFile}, true},
		{"client certificate inline", commoncfg.TLSConfig{CA: pki.caPEM, Cert: pki.clientPEM, Key: commoncfg.Secret(pki.clientKey)}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := clientTestProbe(t, config.HTTPClientConfig{TLSConfig: tc.tls}, srv.URL+"/healthz")
			if tc.ok && (r.Class != ClassOK || r.StatusCode != 200) {
				t.Fatalf("got %+v, want ok 200", r)
			}
			if !tc.ok && (r.Class != ClassFailed || r.Reason != ReasonTransport) {
				t.Fatalf("got %+v, want a transport failure", r)
			}
		})
	}
}

func TestHTTPClientAppliesCredentialsAndHeaders(t *testing.T) {
	srv := probeTestServe(t, func(w http.ResponseWriter, r *http.Request) {
		user, password, _ := r.BasicAuth()
		switch {
		case user == "probe" && password == "s3cret":
		case r.Header.Get("Authorization") == "Bearer t0ken":
		case r.Header.Get("X-Probe-Key") == "k3y":
		default:
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if ua := r.Header.Get("User-Agent"); !strings.HasPrefix(ua, "probegate/") {
			w.WriteHeader(http.StatusBadRequest)
		}
	})
	passwordFile := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(passwordFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		config config.HTTPClientConfig
		status int
	}{
		{"nothing configured", config.HTTPClientConfig{}, 401},
		{"basic auth", config.HTTPClientConfig{BasicAuth: &commoncfg.BasicAuth{Username: "probe", Password: "s3cret"}}, 200},
		{"basic auth password file", config.HTTPClientConfig{BasicAuth: &commoncfg.BasicAuth{Username: "probe", PasswordFile: passwordFile}}, 200},
		{"wrong password", config.HTTPClientConfig{BasicAuth: &commoncfg.BasicAuth{Username: "probe", Password: "guess"}}, 401},
		{"authorization", config.HTTPClientConfig{Authorization: &commoncfg.Authorization{Type: "Bearer", Credentials: "t0ken"}}, 200},
		{"headers", config.HTTPClientConfig{HTTPHeaders: &commoncfg.Headers{Headers: map[string]commoncfg.Header{
			"X-Probe-Key": {Values: []string{"k3y"}},
		}}}, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if r := clientTestProbe(t, tc.config, srv.URL+"/healthz"); r.StatusCode != tc.status {
				t.Fatalf("got %+v, want status %d", r, tc.status)
			}
		})
	}
}

func TestHTTPClientProbesThroughProxy(t *testing.T) {
	var mu sync.Mutex
	var proxied []string
	proxy := probeTestServe(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		proxied = append(proxied, r.URL.String())
		mu.Unlock()
	})
	proxyURL, err := url.Parse(proxy.URL)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing listens at the backend's address: only the proxy can answer.
	backend := probeTestDeadURL(t) + "/healthz"
	hc := config.HTTPClientConfig{ProxyConfig: commoncfg.ProxyConfig{ProxyURL: commoncfg.URL{URL: proxyURL}}}
	if r := clientTestProbe(t, hc, backend); r.Class != ClassOK {
		t.Fatalf("got %+v, want ok from the proxy", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(proxied) != 1 || proxied[0] != backend {
		t.Errorf("the proxy saw %q, want one request for %q", proxied, backend)
	}
}

// Requests that are not probes, such as fan-out's, take the full net/http
// transport: bodies, concurrency and streaming all work.
func TestHTTPClientServesOtherRequests(t *testing.T) {
	srv := probeTestServe(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Write(body)
	})
	client := probeTestClient(t)
	resp, err := client.Post(srv.URL+"/query", "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != "hello" {
		t.Fatalf("POST answered %q, %v; want the echoed body", body, err)
	}
}

func TestHTTPClientRejectsSecretReference(t *testing.T) {
	_, err := NewHTTPClient("test", config.HTTPClientConfig{BasicAuth: &commoncfg.BasicAuth{Username: "u", PasswordRef: "vault-entry"}})
	if err == nil || !strings.Contains(err.Error(), "vault-entry") || !strings.Contains(err.Error(), "secret manager") {
		t.Fatalf("got %v, want an error naming the reference and the missing secret manager", err)
	}
}

package collector

import (
	"context"
	"crypto/tls"
	"io"
	stdlog "log"
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
	"github.com/probegate/probegate/internal/testpki"
)

// clientTestMTLSServer is a loopback backend that demands a client
// certificate signed by the test CA.
func clientTestMTLSServer(t *testing.T, pki *testpki.PKI) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != "probegate" {
			w.WriteHeader(http.StatusForbidden)
		}
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{pki.Server},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pki.CAPool,
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
	pki := testpki.New(t)
	srv := clientTestMTLSServer(t, pki)
	cases := []struct {
		name string
		tls  commoncfg.TLSConfig
		ok   bool
	}{
		{"no client certificate", commoncfg.TLSConfig{CAFile: pki.CAFile}, false},
		{"backend certificate not trusted", commoncfg.TLSConfig{CertFile: pki.ClientFile, KeyFile: pki.ClientKeyFile}, false},
		{"client certificate from files", commoncfg.TLSConfig{CAFile: pki.CAFile, CertFile: pki.ClientFile, KeyFile: pki.ClientKeyFile}, true},
		{"client certificate inline", commoncfg.TLSConfig{CA: pki.CAPEM, Cert: pki.ClientPEM, Key: commoncfg.Secret(pki.ClientKeyPEM)}, true},
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
	backend := deadURL(t) + "/healthz"
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

package httpclient

import (
	"context"
	"crypto/tls"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"
	"go.uber.org/goleak"

	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/deadport"
	"github.com/probegate/probegate/internal/testpki"
)

// TestMain checks that no test leaks a goroutine: every client's
// connections must be closed by the end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// serve starts a loopback backend with handler h.
func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// testClient is the client a new cache builds for hc; its connections are
// closed when the test ends.
func testClient(t *testing.T, hc config.HTTPClientConfig) *http.Client {
	t.Helper()
	client, err := NewCache().Client(hc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.CloseIdleConnections)
	return client
}

// get sends one GET through client with a 2s timeout and returns the
// status, having read and closed the body.
func get(t *testing.T, client *http.Client, url string) (int, error) {
	t.Helper()
	status, _, err := getTraced(t, client, url)
	return status, err
}

// getTraced is get that also reports whether the request went over a
// kept-alive connection.
func getTraced(t *testing.T, client *http.Client, url string) (status int, reused bool, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, reused, nil
}

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
			status, err := get(t, testClient(t, config.HTTPClientConfig{TLSConfig: tc.tls}), srv.URL+"/healthz")
			if tc.ok && (err != nil || status != 200) {
				t.Fatalf("got %d, %v; want 200", status, err)
			}
			if !tc.ok && err == nil {
				t.Fatalf("got %d; want a transport error (TLS handshake)", status)
			}
		})
	}
}

// credentialsServer answers 200 to a request with the test's credentials
// or header, 401 to any other.
func credentialsServer(t *testing.T) *httptest.Server {
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		user, password, _ := r.BasicAuth()
		switch {
		case user == "probe" && password == "s3cret":
		case r.Header.Get("Authorization") == "Bearer t0ken":
		case r.Header.Get("X-Probe-Key") == "k3y":
		default:
			w.WriteHeader(http.StatusUnauthorized)
		}
	})
}

func TestHTTPClientAppliesCredentialsAndHeaders(t *testing.T) {
	srv := credentialsServer(t)
	dir := t.TempDir()
	passwordFile := filepath.Join(dir, "password")
	if err := os.WriteFile(passwordFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("t0ken\n"), 0o600); err != nil {
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
		{"authorization credentials file", config.HTTPClientConfig{Authorization: &commoncfg.Authorization{Type: "Bearer", CredentialsFile: tokenFile}}, 200},
		{"headers", config.HTTPClientConfig{HTTPHeaders: &commoncfg.Headers{Headers: map[string]commoncfg.Header{
			"X-Probe-Key": {Values: []string{"k3y"}},
		}}}, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if status, err := get(t, testClient(t, tc.config), srv.URL+"/healthz"); err != nil || status != tc.status {
				t.Fatalf("got %d, %v; want status %d", status, err, tc.status)
			}
		})
	}
}

// TestHTTPClientRereadsSecretFiles: a password file is read per request,
// so a rotated secret is sent without a reload.
func TestHTTPClientRereadsSecretFiles(t *testing.T) {
	srv := credentialsServer(t)
	passwordFile := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(passwordFile, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	client := testClient(t, config.HTTPClientConfig{BasicAuth: &commoncfg.BasicAuth{Username: "probe", PasswordFile: passwordFile}})
	if status, err := get(t, client, srv.URL); err != nil || status != 401 {
		t.Fatalf("with the old password: %d, %v; want 401", status, err)
	}
	if err := os.WriteFile(passwordFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if status, err := get(t, client, srv.URL); err != nil || status != 200 {
		t.Fatalf("after the file changed: %d, %v; want 200", status, err)
	}
}

func TestHTTPClientProbesThroughProxy(t *testing.T) {
	var mu sync.Mutex
	var proxied []string
	proxy := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		proxied = append(proxied, r.URL.String())
		mu.Unlock()
	})
	proxyURL, err := url.Parse(proxy.URL)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing listens at the backend's address: only the proxy can answer.
	backend := deadport.URL(t) + "/healthz"
	hc := config.HTTPClientConfig{ProxyConfig: commoncfg.ProxyConfig{ProxyURL: commoncfg.URL{URL: proxyURL}}}
	if status, err := get(t, testClient(t, hc), backend); err != nil || status != 200 {
		t.Fatalf("got %d, %v; want 200 from the proxy", status, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(proxied) != 1 || proxied[0] != backend {
		t.Errorf("the proxy saw %q, want one request for %q", proxied, backend)
	}
}

// TestHTTPClientDoesNotFollowRedirects: the client hands a redirect back
// as it is, whatever follow_redirects says: a probe classifies it, a
// fan-out relays it.
func TestHTTPClientDoesNotFollowRedirects(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	})
	hc := commoncfg.DefaultHTTPClientConfig // follow_redirects: true
	if status, err := get(t, testClient(t, hc), srv.URL+"/healthz"); err != nil || status != http.StatusFound {
		t.Fatalf("got %d, %v; want the 302 itself", status, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 1 {
		t.Errorf("the backend saw %q; want the one request, the redirect not followed", paths)
	}
}

// Requests that are not probes, such as fan-out's, take the full net/http
// transport: bodies work.
func TestHTTPClientServesOtherRequests(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Write(body)
	})
	client := testClient(t, config.HTTPClientConfig{})
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

// TestHTTPClientRejectsSecretReference: probegate has no secret manager, so
// a secret reference cannot be resolved and the client is not built.
func TestHTTPClientRejectsSecretReference(t *testing.T) {
	_, err := NewCache().Client(config.HTTPClientConfig{BasicAuth: &commoncfg.BasicAuth{Username: "u", PasswordRef: "vault-entry"}})
	if err == nil || !strings.Contains(err.Error(), "secret ref") || !strings.Contains(err.Error(), "http_client_config") {
		t.Fatalf("got %v, want an http_client_config error about the secret reference", err)
	}
}

// TestCacheSharesClientsByValue: equal configurations get the same client,
// also when they are distinct values; configurations that differ only in a
// secret get different clients, each sending its own secret.
func TestCacheSharesClientsByValue(t *testing.T) {
	srv := credentialsServer(t)
	withPassword := func(password string) config.HTTPClientConfig {
		hc := commoncfg.DefaultHTTPClientConfig
		hc.BasicAuth = &commoncfg.BasicAuth{Username: "probe", Password: commoncfg.Secret(password)}
		return hc
	}
	c := NewCache()
	right, err := c.Client(withPassword("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(right.CloseIdleConnections)
	again, err := c.Client(withPassword("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	if again != right {
		t.Error("two equal configurations got different clients")
	}
	wrong, err := c.Client(withPassword("guess"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wrong.CloseIdleConnections)
	if wrong == right {
		t.Fatal("configurations differing in the password share a client")
	}
	if got := c.Len(); got != 2 {
		t.Errorf("Len() = %d, want 2", got)
	}
	if status, err := get(t, right, srv.URL); err != nil || status != 200 {
		t.Errorf("the client with the right password: %d, %v", status, err)
	}
	if status, err := get(t, wrong, srv.URL); err != nil || status != 401 {
		t.Errorf("the client with the wrong password: %d, %v; want 401", status, err)
	}
}

// watchedServer is a loopback backend that counts the connections it saw
// opened and closed.
type watchedServer struct {
	*httptest.Server
	mu             sync.Mutex
	opened, closed int
}

// newWatchedServer starts a watched backend; handler nil answers 200.
func newWatchedServer(t *testing.T, handler http.Handler) *watchedServer {
	t.Helper()
	w := &watchedServer{}
	if handler == nil {
		handler = http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	}
	w.Server = httptest.NewUnstartedServer(handler)
	w.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		w.mu.Lock()
		defer w.mu.Unlock()
		switch s {
		case http.StateNew:
			w.opened++
		case http.StateClosed, http.StateHijacked:
			w.closed++
		}
	}
	w.Start()
	t.Cleanup(w.Close)
	return w
}

func (w *watchedServer) counts() (opened, closed int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.opened, w.closed
}

// waitClosed waits up to 2s for the server to see n connections closed.
func (w *watchedServer) waitClosed(n int) bool {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, closed := w.counts(); closed >= n {
			return true
		}
	}
	return false
}

func (w *watchedServer) addr(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(w.URL)
	if err != nil {
		t.Fatal(err)
	}
	return DialAddr(u)
}

// TestCloseHostClosesOnlyThatHost: CloseHost closes the kept-alive
// connections to one host, whichever client dialled them, and leaves
// those to other hosts in the pool for reuse.
func TestCloseHostClosesOnlyThatHost(t *testing.T) {
	gone, kept := newWatchedServer(t, nil), newWatchedServer(t, nil)
	c := NewCache()
	one, err := c.Client(config.HTTPClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(one.CloseIdleConnections)
	other, err := c.Client(config.HTTPClientConfig{BearerToken: "x"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.CloseIdleConnections)
	for _, client := range []*http.Client{one, other} {
		for _, srv := range []*watchedServer{gone, kept} {
			if status, err := get(t, client, srv.URL); err != nil || status != 200 {
				t.Fatalf("GET %s: %d, %v", srv.URL, status, err)
			}
		}
	}
	if opened, closed := gone.counts(); opened != 2 || closed != 0 {
		t.Fatalf("before CloseHost: %d connections opened, %d closed; want 2 kept alive", opened, closed)
	}

	c.CloseHost(gone.addr(t))
	if !gone.waitClosed(2) {
		_, closed := gone.counts()
		t.Errorf("%d of 2 connections to the closed host closed within 2s", closed)
	}
	for _, client := range []*http.Client{one, other} {
		if _, reused, err := getTraced(t, client, kept.URL); err != nil || !reused {
			t.Errorf("GET of the other host: reused %v, %v; want its kept-alive connection", reused, err)
		}
	}
	if opened, closed := kept.counts(); opened != 2 || closed != 0 {
		t.Errorf("other host: %d connections opened, %d closed; want the 2 kept alive", opened, closed)
	}
	// The host's next request dials afresh.
	if status, reused, err := getTraced(t, one, gone.URL); err != nil || status != 200 || reused {
		t.Errorf("GET after CloseHost: %d reused %v, %v; want 200 on a new connection", status, reused, err)
	}
	c.conns.mu.Lock()
	tracked := len(c.conns.byAddr[gone.addr(t)])
	c.conns.mu.Unlock()
	if tracked != 1 {
		t.Errorf("%d connections tracked for the host, want the new one only", tracked)
	}
}

// TestRetainDropsUnusedClients: Retain keeps the clients in use, drops the
// others and closes their idle connections; a dropped configuration gets a
// new client next time.
func TestRetainDropsUnusedClients(t *testing.T) {
	srv := newWatchedServer(t, nil)
	c := NewCache()
	keep, err := c.Client(config.HTTPClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(keep.CloseIdleConnections)
	dropCfg := config.HTTPClientConfig{BearerToken: "x"}
	drop, err := c.Client(dropCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop.CloseIdleConnections)
	for _, client := range []*http.Client{keep, drop} {
		if _, err := get(t, client, srv.URL); err != nil {
			t.Fatal(err)
		}
	}

	c.Retain([]*http.Client{keep, keep})
	if got := c.Len(); got != 1 {
		t.Errorf("Len() = %d after retaining one client", got)
	}
	if !srv.waitClosed(1) {
		t.Error("the dropped client's idle connection was not closed within 2s")
	}
	if _, reused, err := getTraced(t, keep, srv.URL); err != nil || !reused {
		t.Errorf("the retained client: reused %v, %v; want its kept-alive connection", reused, err)
	}
	if again, err := c.Client(config.HTTPClientConfig{}); err != nil || again != keep {
		t.Errorf("the retained configuration got %p, %v; want the same client %p", again, err, keep)
	}
	fresh, err := c.Client(dropCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fresh.CloseIdleConnections)
	if fresh == drop {
		t.Error("a dropped configuration got its old client back")
	}
	c.Retain(nil)
	if got := c.Len(); got != 0 {
		t.Errorf("Len() = %d after retaining none", got)
	}
}

func TestDialAddr(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8080/x": "127.0.0.1:8080",
		"http://backend":          "backend:80",
		"https://backend/":        "backend:443",
		"http://[::1]:9090":       "[::1]:9090",
		"https://[::1]":           "[::1]:443",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := DialAddr(u); got != want {
			t.Errorf("DialAddr(%s) = %s, want %s", in, got, want)
		}
	}
}

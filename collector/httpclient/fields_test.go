package httpclient

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/testpki"
)

// These tests hold the client to what each http_client_config field means
// in Prometheus, against real loopback servers, for the fields the other
// tests of the package do not already cover (client certificates, basic
// auth, authorization, headers, proxy_url).

// tlsServer is a loopback HTTPS backend with the test PKI's server
// certificate that records the TLS server name each request came with.
func tlsServer(t *testing.T, pki *testpki.PKI, http2 bool) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var names []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		names = append(names, r.TLS.ServerName)
		mu.Unlock()
		w.Header().Set("X-Proto", r.Proto)
	}))
	srv.EnableHTTP2 = http2
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pki.Server}}
	srv.Config.ErrorLog = stdlog.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), names...)
	}
}

func TestHTTPClientTLSVerification(t *testing.T) {
	pki := testpki.New(t)
	srv, names := tlsServer(t, pki, false)
	cases := []struct {
		name string
		tls  commoncfg.TLSConfig
		ok   bool
		sni  string
	}{
		{"CA not given: the backend is not trusted", commoncfg.TLSConfig{}, false, ""},
		{"CA file", commoncfg.TLSConfig{CAFile: pki.CAFile}, true, ""},
		{"CA inline", commoncfg.TLSConfig{CA: pki.CAPEM}, true, ""},
		{"server name the certificate names", commoncfg.TLSConfig{CAFile: pki.CAFile, ServerName: testpki.ServerName}, true, testpki.ServerName},
		{"server name the certificate does not name", commoncfg.TLSConfig{CAFile: pki.CAFile, ServerName: "other.probegate.test"}, false, ""},
		{"insecure_skip_verify without the CA", commoncfg.TLSConfig{InsecureSkipVerify: true}, true, ""},
		{"insecure_skip_verify with a wrong server name", commoncfg.TLSConfig{InsecureSkipVerify: true, ServerName: "other.probegate.test"}, true, "other.probegate.test"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(names())
			status, err := get(t, testClient(t, config.HTTPClientConfig{TLSConfig: tc.tls}), srv.URL+"/healthz")
			if !tc.ok {
				if err == nil {
					t.Fatalf("got %d; want a TLS verification error", status)
				}
				return
			}
			if err != nil || status != 200 {
				t.Fatalf("got %d, %v; want 200", status, err)
			}
			// An IP address is never sent as a server name; a configured
			// server_name is, verified or not.
			if got := names()[before:]; len(got) != 1 || got[0] != tc.sni {
				t.Errorf("the backend saw server names %q, want [%q]", got, tc.sni)
			}
		})
	}
}

// TestHTTPClientEnableHTTP2: HTTP/2 is spoken to a backend that offers it
// exactly when enable_http2 is set, as in Prometheus.
func TestHTTPClientEnableHTTP2(t *testing.T) {
	pki := testpki.New(t)
	srv, _ := tlsServer(t, pki, true)
	for _, tc := range []struct {
		enable bool
		proto  string
	}{{true, "HTTP/2.0"}, {false, "HTTP/1.1"}} {
		hc := config.HTTPClientConfig{EnableHTTP2: tc.enable, TLSConfig: commoncfg.TLSConfig{CAFile: pki.CAFile}}
		client := testClient(t, hc)
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-Proto"); got != tc.proto {
			t.Errorf("enable_http2 %v: the backend saw %s, want %s", tc.enable, got, tc.proto)
		}
	}
}

// tokenServer is a loopback OAuth2 token endpoint for the client
// credentials grant: it hands out token for client "probegate" with
// secret "s3cret" and scope "probe", and counts the tokens it issued.
func tokenServer(t *testing.T, token string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var issued atomic.Int64
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		id, secret, _ := r.BasicAuth()
		if r.FormValue("grant_type") != "client_credentials" || id != "probegate" || secret != "s3cret" ||
			r.FormValue("scope") != "probe" || r.FormValue("audience") != "backends" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		issued.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": 3600})
	})
	return srv, &issued
}

func TestHTTPClientOAuth2(t *testing.T) {
	tokens, issued := tokenServer(t, "t0ken")
	backend := credentialsServer(t)
	secretFile := filepath.Join(t.TempDir(), "client-secret")
	if err := os.WriteFile(secretFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	oauth := func(secret, file string) *commoncfg.OAuth2 {
		return &commoncfg.OAuth2{
			ClientID: "probegate", ClientSecret: commoncfg.Secret(secret), ClientSecretFile: file,
			TokenURL: tokens.URL + "/token", Scopes: []string{"probe"},
			EndpointParams: map[string]string{"audience": "backends"},
		}
	}
	cases := []struct {
		name   string
		oauth  *commoncfg.OAuth2
		status int
		err    bool
	}{
		{"client secret", oauth("s3cret", ""), 200, false},
		{"client secret file", oauth("", secretFile), 200, false},
		{"wrong client secret: no token, no request", oauth("guess", ""), 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := issued.Load()
			client := testClient(t, config.HTTPClientConfig{OAuth2: tc.oauth})
			for range 3 {
				status, err := get(t, client, backend.URL+"/healthz")
				if tc.err != (err != nil) || status != tc.status {
					t.Fatalf("got %d, %v; want %d (error: %v)", status, err, tc.status, tc.err)
				}
			}
			if got := issued.Load() - before; !tc.err && got != 1 {
				t.Errorf("%d tokens issued for three requests, want one, reused until it expires", got)
			}
		})
	}
}

// TestHTTPClientHeaderSecretsAndFiles: http_headers takes values, secrets
// and files, every one sent, a file read per request.
func TestHTTPClientHeaderSecretsAndFiles(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := serve(t, func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = r.Header.Values("X-Probe")
		mu.Unlock()
	})
	file := filepath.Join(t.TempDir(), "header")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	client := testClient(t, config.HTTPClientConfig{HTTPHeaders: &commoncfg.Headers{Headers: map[string]commoncfg.Header{
		"X-Probe": {Values: []string{"value"}, Secrets: []commoncfg.Secret{"secret"}, Files: []string{file}},
	}}})
	check := func(want ...string) {
		t.Helper()
		if status, err := get(t, client, srv.URL); err != nil || status != 200 {
			t.Fatalf("got %d, %v", status, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != len(want) {
			t.Fatalf("X-Probe %q, want %q", seen, want)
		}
		for i := range want {
			if seen[i] != want[i] {
				t.Fatalf("X-Probe %q, want %q", seen, want)
			}
		}
	}
	check("value", "secret", "from-file")
	if err := os.WriteFile(file, []byte("rotated\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check("value", "secret", "rotated")
}

// TestHTTPClientNeverFollowsRedirects: with follow_redirects on or off, a
// redirect comes back as it is: a probe classifies it (a 302 is ok), a
// fan-out relays it. Both use the transport, which never follows one,
// and the client follows none either.
func TestHTTPClientNeverFollowsRedirects(t *testing.T) {
	var followed atomic.Int64
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			followed.Add(1)
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	})
	for _, follow := range []bool{false, true} {
		client := testClient(t, config.HTTPClientConfig{FollowRedirects: follow})
		if status, err := get(t, client, srv.URL+"/healthz"); err != nil || status != http.StatusFound {
			t.Errorf("follow_redirects %v, through the client: %d, %v; want the 302 itself", follow, status, err)
		}
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/healthz", nil)
		resp, err := client.Transport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound {
			t.Errorf("follow_redirects %v, through the transport: %d, want 302", follow, resp.StatusCode)
		}
	}
	if n := followed.Load(); n != 0 {
		t.Errorf("the redirect target was asked %d times, want never", n)
	}
}

// TestHTTPClientConnectionsAreNotTraced: the transport dials through the
// connection tracker with nothing around the connection, in particular no
// go-conntrack wrapper with its per-connection trace log.
func TestHTTPClientConnectionsAreNotTraced(t *testing.T) {
	srv := serve(t, func(http.ResponseWriter, *http.Request) {})
	client := testClient(t, config.HTTPClientConfig{})
	var conn net.Conn
	ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { conn = i.Conn }})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if tc, ok := conn.(*trackedConn); !ok {
		t.Fatalf("the request went over a %T, want the tracker's own connection", conn)
	} else if _, ok := tc.Conn.(*net.TCPConn); !ok {
		t.Errorf("the tracked connection wraps a %T, want the *net.TCPConn itself", tc.Conn)
	}
}

// TestHTTPClientKeepsConnectionsForOverlappingRequests: requests that
// overlap (concurrent fan-out rounds, a probe meeting one) open a
// connection each, and those connections stay for the next burst: a
// second burst as large dials nothing, so concurrent rounds do not pay a
// dial and leave a TIME_WAIT socket each.
func TestHTTPClientKeepsConnectionsForOverlappingRequests(t *testing.T) {
	const overlapping = 3
	h := newHoldingServer(t)
	client := testClient(t, config.HTTPClientConfig{})
	h.burst(t, client, overlapping)
	h.burst(t, client, overlapping)
	if opened, closed := h.counts(); opened != overlapping || closed != 0 {
		t.Errorf("%d connections opened and %d closed over two bursts of %d, want %d opened and none closed",
			opened, closed, overlapping, overlapping)
	}
	if status, reused, err := getTraced(t, client, h.URL); err != nil || status != 200 || !reused {
		t.Errorf("the next request: %d, reused %v, %v; want it on a connection kept", status, reused, err)
	}
}

// TestHTTPClientRequestCloseGetsItsOwnConnection: a request with Close set
// (a probe with keep_alive off) neither takes the kept-alive connection
// nor leaves its own open; the others keep theirs.
func TestHTTPClientRequestCloseGetsItsOwnConnection(t *testing.T) {
	w := newWatchedServer(t, nil)
	client := testClient(t, config.HTTPClientConfig{})
	if status, err := get(t, client, w.URL); err != nil || status != 200 {
		t.Fatalf("got %d, %v", status, err)
	}
	for i := range 3 {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		var reused bool
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, w.URL, nil)
		req.Close = true
		resp, err := client.Transport.RoundTrip(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		cancel()
		if reused {
			t.Errorf("request %d with Close went over a kept-alive connection", i)
		}
		if !w.waitClosed(i + 1) {
			opened, closed := w.counts()
			t.Fatalf("after request %d with Close: %d connections opened, %d closed; want its own closed", i, opened, closed)
		}
	}
	if status, reused, err := getTraced(t, client, w.URL); err != nil || status != 200 || !reused {
		t.Errorf("a request without Close: %d, reused %v, %v; want the first request's connection", status, reused, err)
	}
	if opened, closed := w.counts(); opened != 4 || closed != 3 {
		t.Errorf("%d connections opened, %d closed; want 4 and 3", opened, closed)
	}
}

// TestHTTPClientReadsHeadsLargerThanItsBuffers: a response head and a
// request far larger than the connection's buffers go through whole.
func TestHTTPClientReadsHeadsLargerThanItsBuffers(t *testing.T) {
	long := strings.Repeat("x", 8*readBufferSize)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Long") != long {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("X-Long", long)
		io.WriteString(w, long)
	})
	client := testClient(t, config.HTTPClientConfig{})
	for range 2 { // the second on the kept connection
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("X-Long", long)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Long") != long || string(body) != long {
			t.Fatalf("status %d, header of %d bytes, body of %d bytes, %v; want 200 and %d bytes each",
				resp.StatusCode, len(resp.Header.Get("X-Long")), len(body), err, len(long))
		}
	}
}

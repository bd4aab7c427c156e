package probe

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/testclock"
	"github.com/probegate/probegate/internal/testpki"
)

// The secrets of the debug tests' backends, which no answer may show.
const (
	debugTestPassword = "s3cr3t-basic-pass"
	debugTestToken    = "probe-header-token-42"
	debugTestSession  = "session-value-9f8e"
)

// debugTestServer is a loopback backend whose answer carries everything a
// debug probe must hide: a session cookie, credentials in headers, and the
// probe's own secrets echoed in a header and the body.
func debugTestServer(t *testing.T, requests *atomic.Int64) http.Handler {
	t.Helper()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		_, password, _ := r.BasicAuth()
		w.Header().Add("Set-Cookie", "session="+debugTestSession+"; Path=/; HttpOnly")
		w.Header().Set("Authorization", "Bearer answer-credential-77")
		w.Header().Set("X-Api-Key", "answer-api-key-55")
		w.Header().Set("X-Echo", "password="+password+" token="+r.Header.Get("X-Auth-Token"))
		w.Header().Set("Content-Type", "text/plain")
		switch r.URL.Path {
		case "/big":
			fmt.Fprint(w, strings.Repeat("x", 1020)+password+strings.Repeat("y", 2000))
		case "/down":
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, "overloaded")
		default:
			fmt.Fprintf(w, "ok; you sent %s and %s", password, r.Header.Get("X-Auth-Token"))
		}
	})
}

// debugTestPool is a pool of one backend "a" at url whose client sends
// basic auth and whose probe sends a token header.
func debugTestPool(t *testing.T, url, path string, cc config.HTTPClientConfig) *pool.Pool {
	t.Helper()
	cc.BasicAuth = &commoncfg.BasicAuth{Username: "probegate", Password: debugTestPassword}
	cfg := testConfig(config.Backend{Name: "a", URL: url, HTTPClientConfig: &cc})
	cfg.HealthProbe.Path = path
	cfg.HealthProbe.Headers = map[string]string{"X-Auth-Token": debugTestToken}
	return testPool(t, cfg)
}

// debugTestGet asks the debug handler h for backend name and returns the
// status, the Retry-After header and the body.
func debugTestGet(t *testing.T, h http.Handler, target string) (int, string, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	mux := http.NewServeMux()
	mux.Handle(DebugPattern, h)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	return rec.Code, rec.Header().Get("Retry-After"), rec.Body.String()
}

// debugTestReport decodes a JSON answer.
func debugTestReport(t *testing.T, body string) debugReport {
	t.Helper()
	var rep debugReport
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return rep
}

// debugTestNoSecret fails when the answer shows any secret.
func debugTestNoSecret(t *testing.T, answer string) {
	t.Helper()
	for _, secret := range []string{debugTestPassword, debugTestToken, debugTestSession, "answer-credential-77", "answer-api-key-55"} {
		if strings.Contains(answer, secret) {
			t.Errorf("the answer shows the secret %q:\n%s", secret, answer)
		}
	}
}

func TestDebugProbeReportsAndRedacts(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(debugTestServer(t, &requests))
	t.Cleanup(srv.Close)
	p := debugTestPool(t, srv.URL, "/healthz", config.HTTPClientConfig{})
	clock := testclock.New(time.Unix(1700000000, 0))
	h := DebugHandler(DebugOptions{Pool: p, Now: clock.Now})

	code, _, body := debugTestGet(t, h, "/api/v1/backends/a/probe")
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	debugTestNoSecret(t, body)
	rep := debugTestReport(t, body)
	if rep.Class != "ok" || rep.Reason != "" || rep.Status != 200 || rep.Error != "" || rep.Kind != "http" {
		t.Errorf("class %q reason %q status %d error %q kind %q, want an ok 200 over http", rep.Class, rep.Reason, rep.Status, rep.Error, rep.Kind)
	}
	if ti := rep.Timings; ti.Connect == nil || ti.FirstByte == nil || ti.Total <= 0 || *ti.FirstByte > ti.Total || ti.TLS != nil || ti.DNS != nil {
		t.Errorf("timings %+v: want connect and first byte within the total, and no DNS (an IP address) or TLS (plaintext)", ti)
	}
	if rep.Connection == nil || rep.Connection.Reused || rep.Connection.RemoteAddr != strings.TrimPrefix(srv.URL, "http://") {
		t.Errorf("connection %+v: want a new connection to the server", rep.Connection)
	}
	resp := rep.Response
	if resp == nil {
		t.Fatal("no response in the report")
	}
	want := map[string]string{
		"Set-Cookie":    "session=<secret>; Path=/; HttpOnly",
		"Authorization": "<secret>",
		"X-Api-Key":     "<secret>",
		"X-Echo":        "password=<secret> token=<secret>",
		"Content-Type":  "text/plain",
	}
	for name, value := range want {
		if got := resp.Header[name]; len(got) != 1 || got[0] != value {
			t.Errorf("response header %s = %q, want %q", name, got, value)
		}
	}
	if resp.Body != "ok; you sent <secret> and <secret>" || resp.BodyTruncated || resp.Status != "200 OK" {
		t.Errorf("response %+v", resp)
	}
	if got := rep.Request.Header["X-Auth-Token"]; len(got) != 1 || got[0] != "<secret>" {
		t.Errorf("request header X-Auth-Token = %q, want it hidden", got)
	}

	// The probe changed nothing: no result recorded, nothing observed.
	snap := p.Backends()[0].Snapshot()
	if snap.Probes != 0 || snap.LastProbe != nil || snap.Health.State.String() != "unknown" {
		t.Errorf("after a debug probe the backend has %d probes, last %v, state %v; want none recorded", snap.Probes, snap.LastProbe, snap.Health.State)
	}

	t.Run("text format", func(t *testing.T) {
		clock.Advance(time.Second)
		code, _, text := debugTestGet(t, h, "/api/v1/backends/a/probe?format=text")
		if code != http.StatusOK {
			t.Fatalf("status %d: %s", code, text)
		}
		debugTestNoSecret(t, text)
		for _, part := range []string{
			"Logs for the probe:\n", `msg="Beginning probe" kind=http`, `msg="Received HTTP response" status_code=200`,
			`msg="Probe succeeded" class=ok`,
			"\nMetrics that would have been returned:\n", `probegate_backend_last_probe_status_code{backend="a"} 200`,
			"\nResponse:\nHTTP/1.1 200 OK\n", "Set-Cookie: session=<secret>; Path=/; HttpOnly\n",
			"\nProbe configuration:\n", "X-Auth-Token: <secret>",
		} {
			if !strings.Contains(text, part) {
				t.Errorf("the text answer lacks %q:\n%s", part, text)
			}
		}
	})
}

// TestDebugProbeBodyAndFailure: a failing answer is reported as such, and
// only the first KiB of a long body is shown, a secret across the cut
// hidden whole.
func TestDebugProbeBodyAndFailure(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(debugTestServer(t, &requests))
	t.Cleanup(srv.Close)
	clock := testclock.New(time.Unix(1700000000, 0))

	big := DebugHandler(DebugOptions{Pool: debugTestPool(t, srv.URL, "/big", config.HTTPClientConfig{}), Now: clock.Now})
	_, _, body := debugTestGet(t, big, "/api/v1/backends/a/probe")
	debugTestNoSecret(t, body)
	resp := debugTestReport(t, body).Response
	if len(resp.Body) != debugBodyBytes || !resp.BodyTruncated || resp.BodyBytesRead != 1020+len(debugTestPassword)+2000 {
		t.Errorf("body of %d bytes, truncated %v, %d read; want the first %d of %d", len(resp.Body), resp.BodyTruncated, resp.BodyBytesRead, debugBodyBytes, 1020+len(debugTestPassword)+2000)
	}
	if !strings.HasSuffix(resp.Body, "xxxx<sec") {
		t.Errorf("the cut body ends %q, want the secret replaced before the cut", resp.Body[len(resp.Body)-20:])
	}

	down := DebugHandler(DebugOptions{Pool: debugTestPool(t, srv.URL, "/down", config.HTTPClientConfig{}), Now: clock.Now})
	_, _, body = debugTestGet(t, down, "/api/v1/backends/a/probe")
	rep := debugTestReport(t, body)
	if rep.Class != "failed" || rep.Reason != "http_5xx" || rep.Status != 503 || rep.Response.Body != "overloaded" {
		t.Errorf("class %q reason %q status %d body %q, want failed http_5xx 503", rep.Class, rep.Reason, rep.Status, rep.Response.Body)
	}
}

// TestDebugProbeOverTLS debugs a backend over real TLS: the TLS phase, the
// version and the certificate chain are reported.
func TestDebugProbeOverTLS(t *testing.T) {
	pki := testpki.New(t)
	var requests atomic.Int64
	srv := httptest.NewUnstartedServer(debugTestServer(t, &requests))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pki.Server}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	p := debugTestPool(t, srv.URL, "/healthz", config.HTTPClientConfig{TLSConfig: commoncfg.TLSConfig{CAFile: pki.CAFile}})
	_, _, body := debugTestGet(t, DebugHandler(DebugOptions{Pool: p}), "/api/v1/backends/a/probe")
	debugTestNoSecret(t, body)
	rep := debugTestReport(t, body)
	if rep.Class != "ok" || rep.Timings.TLS == nil || rep.Timings.Connect == nil {
		t.Fatalf("class %q, timings %+v: want ok with connect and TLS phases", rep.Class, rep.Timings)
	}
	c := rep.Connection
	if c == nil || !strings.HasPrefix(c.TLSVersion, "TLS 1.") || c.TLSCertExpiry == nil || len(c.TLSPeerCertificates) != 1 || c.TLSPeerCertificates[0].Subject != "CN=backend" {
		t.Errorf("connection %+v: want the TLS version, the expiry and the backend's certificate", c)
	}
}

// TestDebugProbeResolvesNames: a backend named by host name shows the DNS
// phase (localhost, resolved from the hosts file).
func TestDebugProbeResolvesNames(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(debugTestServer(t, &requests))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p := debugTestPool(t, "http://localhost:"+port, "/healthz", config.HTTPClientConfig{})
	_, _, body := debugTestGet(t, DebugHandler(DebugOptions{Pool: p}), "/api/v1/backends/a/probe")
	if rep := debugTestReport(t, body); rep.Class != "ok" || rep.Timings.DNS == nil {
		t.Errorf("class %q, timings %+v: want ok with a DNS phase", rep.Class, rep.Timings)
	}
}

// TestDebugProbeRateLimit: a backend is debugged at most once a second,
// the refusals sending nothing to it; other backends are not held back.
func TestDebugProbeRateLimit(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(debugTestServer(t, &requests))
	t.Cleanup(srv.Close)
	cfg := testConfig(config.Backend{Name: "a", URL: srv.URL}, config.Backend{Name: "b", URL: srv.URL})
	clock := testclock.New(time.Unix(1700000000, 0))
	h := DebugHandler(DebugOptions{Pool: testPool(t, cfg), Now: clock.Now})

	steps := []struct {
		advance    time.Duration
		backend    string
		code       int
		retryAfter string
	}{
		{0, "a", http.StatusOK, ""},
		{0, "a", http.StatusTooManyRequests, "1"},
		{0, "b", http.StatusOK, ""},
		{500 * time.Millisecond, "a", http.StatusTooManyRequests, "1"},
		{499 * time.Millisecond, "a", http.StatusTooManyRequests, "1"},
		{time.Millisecond, "a", http.StatusOK, ""},
		{0, "a", http.StatusTooManyRequests, "1"},
	}
	sent := int64(0)
	for i, s := range steps {
		clock.Advance(s.advance)
		code, retryAfter, body := debugTestGet(t, h, "/api/v1/backends/"+s.backend+"/probe")
		if code != s.code || retryAfter != s.retryAfter {
			t.Errorf("step %d (%s): status %d, Retry-After %q; want %d, %q: %s", i, s.backend, code, retryAfter, s.code, s.retryAfter, body)
		}
		if code == http.StatusOK {
			sent++
		}
	}
	if got := requests.Load(); got != sent {
		t.Errorf("the backends got %d requests for %d debug probes answered", got, sent)
	}
}

func TestDebugProbeRefusals(t *testing.T) {
	p := testPool(t, testConfig(config.Backend{Name: "a", URL: "http://127.0.0.1:9"}))
	h := DebugHandler(DebugOptions{Pool: p})
	cases := []struct {
		name, target string
		code         int
		says         string
	}{
		{"unknown backend", "/api/v1/backends/nope/probe", http.StatusNotFound, `no backend is named \"nope\"`},
		{"unknown format", "/api/v1/backends/a/probe?format=xml", http.StatusBadRequest, `format=\"xml\"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := debugTestGet(t, h, tc.target)
			if code != tc.code || !strings.Contains(body, tc.says) {
				t.Errorf("status %d %s, want %d saying %s", code, body, tc.code, tc.says)
			}
		})
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/backends/a/probe", nil))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: status %d, Allow %q; want 405 with GET, HEAD", rec.Code, rec.Header().Get("Allow"))
	}
}

// TestDebugProbeOtherKinds: a tcp backend is debugged with its own kind's
// probe and classification.
func TestDebugProbeOtherKinds(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	cfg := testConfig(config.Backend{Name: "a", URL: "http://" + lis.Addr().String()})
	cfg.HealthProbe.Kind = config.KindTCP
	_, _, body := debugTestGet(t, DebugHandler(DebugOptions{Pool: testPool(t, cfg)}), "/api/v1/backends/a/probe")
	if rep := debugTestReport(t, body); rep.Kind != "tcp" || rep.Class != "ok" || rep.Answer != "connected" || rep.Response != nil {
		t.Errorf("report %s: want an ok tcp probe, connected", body)
	}
}

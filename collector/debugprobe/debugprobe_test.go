package debugprobe

import (
	"context"
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
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/discovery"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/deadport"
	"github.com/probegate/probegate/internal/testclock"
	"github.com/probegate/probegate/internal/testconfig"
	"github.com/probegate/probegate/internal/testpki"
)

// The secrets of the debug tests' backends, which no answer may show.
const (
	secretPassword = "s3cr3t-basic-pass"
	secretToken    = "probe-header-token-42"
	secretSession  = "session-value-9f8e"
)

// leakyHandler is a loopback backend whose answer carries everything a
// debug probe must hide: a session cookie, credentials in headers, and the
// probe's own secrets echoed in a header and the body.
func leakyHandler(t *testing.T, requests *atomic.Int64) http.Handler {
	t.Helper()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		_, password, _ := r.BasicAuth()
		w.Header().Add("Set-Cookie", "session="+secretSession+"; Path=/; HttpOnly")
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

// newPool is a pool of the configuration's backends. Every client's idle
// connections are closed when the test ends.
func newPool(t *testing.T, cfg *config.Config) *pool.Pool {
	t.Helper()
	p := pool.New(nil, nil)
	if err := p.Apply(discovery.Static(cfg), pool.SettingsOf(cfg)); err != nil {
		t.Fatal(err)
	}
	for _, b := range p.Backends() {
		t.Cleanup(b.Client.CloseIdleConnections)
	}
	return p
}

// secretPool is a pool of one backend "a" at url whose client sends
// basic auth and whose probe sends a token header.
func secretPool(t *testing.T, url, path string, cc config.HTTPClientConfig) *pool.Pool {
	t.Helper()
	cc.BasicAuth = &commoncfg.BasicAuth{Username: "probegate", Password: secretPassword}
	cfg := testconfig.New(config.Backend{Name: "a", URL: url, HTTPClientConfig: &cc})
	cfg.HealthProbe.Path = path
	cfg.HealthProbe.Headers = map[string]string{"X-Auth-Token": secretToken}
	return newPool(t, cfg)
}

// get asks the debug handler h for backend name and returns the
// status, the Retry-After header and the body.
func get(t *testing.T, h http.Handler, target string) (int, string, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	mux := http.NewServeMux()
	mux.Handle(Pattern, h)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	return rec.Code, rec.Header().Get("Retry-After"), rec.Body.String()
}

// decode decodes a JSON answer.
func decode(t *testing.T, body string) report {
	t.Helper()
	var rep report
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return rep
}

// checkNoSecret fails when the answer shows any secret.
func checkNoSecret(t *testing.T, answer string) {
	t.Helper()
	for _, secret := range []string{secretPassword, secretToken, secretSession, "answer-credential-77", "answer-api-key-55"} {
		if strings.Contains(answer, secret) {
			t.Errorf("the answer shows the secret %q:\n%s", secret, answer)
		}
	}
}

func TestReportsAndRedacts(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(leakyHandler(t, &requests))
	t.Cleanup(srv.Close)
	p := secretPool(t, srv.URL, "/healthz", config.HTTPClientConfig{})
	clock := testclock.New(time.Unix(1700000000, 0))
	h := Handler(Options{Pool: p, Now: clock.Now})

	code, _, body := get(t, h, "/api/v1/backends/a/probe")
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	checkNoSecret(t, body)
	rep := decode(t, body)
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
		code, _, text := get(t, h, "/api/v1/backends/a/probe?format=text")
		if code != http.StatusOK {
			t.Fatalf("status %d: %s", code, text)
		}
		checkNoSecret(t, text)
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

// TestBodyAndFailure: a failing answer is reported as such, and
// only the first KiB of a long body is shown, a secret across the cut
// hidden whole.
func TestBodyAndFailure(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(leakyHandler(t, &requests))
	t.Cleanup(srv.Close)
	clock := testclock.New(time.Unix(1700000000, 0))

	big := Handler(Options{Pool: secretPool(t, srv.URL, "/big", config.HTTPClientConfig{}), Now: clock.Now})
	_, _, body := get(t, big, "/api/v1/backends/a/probe")
	checkNoSecret(t, body)
	resp := decode(t, body).Response
	if len(resp.Body) != bodyBytes || !resp.BodyTruncated || resp.BodyBytesRead != 1020+len(secretPassword)+2000 {
		t.Errorf("body of %d bytes, truncated %v, %d read; want the first %d of %d", len(resp.Body), resp.BodyTruncated, resp.BodyBytesRead, bodyBytes, 1020+len(secretPassword)+2000)
	}
	if !strings.HasSuffix(resp.Body, "xxxx<sec") {
		t.Errorf("the cut body ends %q, want the secret replaced before the cut", resp.Body[len(resp.Body)-20:])
	}

	down := Handler(Options{Pool: secretPool(t, srv.URL, "/down", config.HTTPClientConfig{}), Now: clock.Now})
	_, _, body = get(t, down, "/api/v1/backends/a/probe")
	rep := decode(t, body)
	if rep.Class != "failed" || rep.Reason != "http_5xx" || rep.Status != 503 || rep.Response.Body != "overloaded" {
		t.Errorf("class %q reason %q status %d body %q, want failed http_5xx 503", rep.Class, rep.Reason, rep.Status, rep.Response.Body)
	}
}

// TestOverTLS debugs a backend over real TLS: the TLS phase, the
// version and the certificate chain are reported.
func TestOverTLS(t *testing.T) {
	pki := testpki.New(t)
	var requests atomic.Int64
	srv := httptest.NewUnstartedServer(leakyHandler(t, &requests))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pki.Server}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	p := secretPool(t, srv.URL, "/healthz", config.HTTPClientConfig{TLSConfig: commoncfg.TLSConfig{CAFile: pki.CAFile}})
	_, _, body := get(t, Handler(Options{Pool: p}), "/api/v1/backends/a/probe")
	checkNoSecret(t, body)
	rep := decode(t, body)
	if rep.Class != "ok" || rep.Timings.TLS == nil || rep.Timings.Connect == nil {
		t.Fatalf("class %q, timings %+v: want ok with connect and TLS phases", rep.Class, rep.Timings)
	}
	c := rep.Connection
	if c == nil || !strings.HasPrefix(c.TLSVersion, "TLS 1.") || c.TLSCertExpiry == nil || len(c.TLSPeerCertificates) != 1 || c.TLSPeerCertificates[0].Subject != "CN=backend" {
		t.Errorf("connection %+v: want the TLS version, the expiry and the backend's certificate", c)
	}
}

// TestResolvesNames: a backend named by host name shows the DNS
// phase (localhost, resolved from the hosts file).
func TestResolvesNames(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(leakyHandler(t, &requests))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p := secretPool(t, "http://localhost:"+port, "/healthz", config.HTTPClientConfig{})
	_, _, body := get(t, Handler(Options{Pool: p}), "/api/v1/backends/a/probe")
	if rep := decode(t, body); rep.Class != "ok" || rep.Timings.DNS == nil {
		t.Errorf("class %q, timings %+v: want ok with a DNS phase", rep.Class, rep.Timings)
	}
}

// TestTimesOut: a debug probe ends by the backend's probe timeout and
// reports the timeout, as the prober would.
func TestTimesOut(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(srv.Close)
	cfg := testconfig.New(config.Backend{Name: "a", URL: srv.URL})
	cfg.HealthProbe.Timeout = model.Duration(100 * time.Millisecond)
	// The request gives up after 5s, so that a probe without its own
	// deadline fails the test rather than hanging it.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	rec := httptest.NewRecorder()
	mux := http.NewServeMux()
	mux.Handle(Pattern, Handler(Options{Pool: newPool(t, cfg)}))
	mux.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, "/api/v1/backends/a/probe", nil))
	rep := decode(t, rec.Body.String())
	if rep.Class != "failed" || rep.Reason != "timeout" || rep.Response != nil || !strings.Contains(rep.Error, "100ms") {
		t.Errorf("report %s: want a failed probe, timed out without an answer", rec.Body.String())
	}
	if rep.Timings.Total < 0.1 || rep.Timings.Total >= 2 {
		t.Errorf("the probe took %vs, want its 100ms timeout", rep.Timings.Total)
	}
}

// TestHidesURLPassword: the password of the backend's URL is hidden in
// the report, as everywhere probegate shows a URL.
func TestHidesURLPassword(t *testing.T) {
	p := newPool(t, testconfig.New(config.Backend{Name: "a", URL: "http://probegate:url-pass-31@" + strings.TrimPrefix(deadport.URL(t), "http://")}))
	_, _, body := get(t, Handler(Options{Pool: p}), "/api/v1/backends/a/probe")
	if rep := decode(t, body); strings.Contains(body, "url-pass-31") || !strings.Contains(rep.URL, "probegate:xxxxx@") {
		t.Errorf("report %s: want the URL's password hidden", body)
	}
}

// TestRateLimit: a backend is debugged at most once a second,
// the refusals sending nothing to it; other backends are not held back.
func TestRateLimit(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(leakyHandler(t, &requests))
	t.Cleanup(srv.Close)
	cfg := testconfig.New(config.Backend{Name: "a", URL: srv.URL}, config.Backend{Name: "b", URL: srv.URL})
	clock := testclock.New(time.Unix(1700000000, 0))
	h := Handler(Options{Pool: newPool(t, cfg), Now: clock.Now})

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
		code, retryAfter, body := get(t, h, "/api/v1/backends/"+s.backend+"/probe")
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

func TestRefusals(t *testing.T) {
	p := newPool(t, testconfig.New(config.Backend{Name: "a", URL: "http://127.0.0.1:9"}))
	h := Handler(Options{Pool: p})
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
			code, _, body := get(t, h, tc.target)
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

// TestOtherKinds: a tcp backend is debugged with its own kind's
// probe and classification.
func TestOtherKinds(t *testing.T) {
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
	cfg := testconfig.New(config.Backend{Name: "a", URL: "http://" + lis.Addr().String()})
	cfg.HealthProbe.Kind = config.KindTCP
	_, _, body := get(t, Handler(Options{Pool: newPool(t, cfg)}), "/api/v1/backends/a/probe")
	if rep := decode(t, body); rep.Kind != "tcp" || rep.Class != "ok" || rep.Answer != "connected" || rep.Response != nil {
		t.Errorf("report %s: want an ok tcp probe, connected", body)
	}
}

// TestDialsItsOwnConnection: every debug probe dials a connection of its
// own, whichever path the backend's probe takes, so that its connect (and
// TLS) phases always show, as blackbox_exporter's debug probes do, and
// says that the connection was not reused; the report names the probe's
// path and, apart, the connection the backend's probe takes and the
// setting that chose it.
func TestDialsItsOwnConnection(t *testing.T) {
	pki := testpki.New(t)
	cases := []struct {
		name                    string
		tls                     bool
		cc                      config.HTTPClientConfig
		wantConnection, setting string
	}{
		{"own connection", false, config.HTTPClientConfig{}, "own", ""},
		{"own connection over TLS", true, config.HTTPClientConfig{TLSConfig: commoncfg.TLSConfig{CA: pki.CAPEM}}, "own", ""},
		{"net/http", false, config.HTTPClientConfig{BasicAuth: &commoncfg.BasicAuth{Username: "u", Password: secretPassword}}, "transport", "basic_auth"},
		{"net/http over TLS", true, config.HTTPClientConfig{TLSConfig: commoncfg.TLSConfig{CAFile: pki.CAFile}}, "transport", "tls_config.ca_file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var conns atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
				if state == http.StateNew {
					conns.Add(1)
				}
			}
			if tc.tls {
				srv.TLS = &tls.Config{Certificates: []tls.Certificate{pki.Server}}
				srv.StartTLS()
			} else {
				srv.Start()
			}
			t.Cleanup(srv.Close)
			cc := tc.cc
			cfg := testconfig.New(config.Backend{Name: "a", URL: srv.URL, HTTPClientConfig: &cc})
			cfg.HealthProbe.Path = "/debugged"
			p := newPool(t, cfg)
			for i := range 2 {
				// A handler each time: one limits how often a backend is
				// debugged.
				_, _, body := get(t, Handler(Options{Pool: p}), "/api/v1/backends/a/probe")
				rep := decode(t, body)
				if rep.Class != "ok" || rep.Timings.Connect == nil || (tc.tls && rep.Timings.TLS == nil) {
					t.Errorf("debug probe %d: class %q, timings %+v: want ok with its connect (and TLS) phase", i+1, rep.Class, rep.Timings)
				}
				if rep.Connection == nil || rep.Connection.Reused {
					t.Errorf("debug probe %d: connection %+v, want a new one", i+1, rep.Connection)
				} else if tc.tls && (rep.Connection.TLSVersion == "" || len(rep.Connection.TLSPeerCertificates) != 1) {
					t.Errorf("debug probe %d: connection %+v, want its TLS version and certificate", i+1, rep.Connection)
				}
				if rep.ProbePath != "/debugged" {
					t.Errorf("debug probe %d: probe_path %q, want the probe's path %q", i+1, rep.ProbePath, "/debugged")
				}
				if rep.ConnectionPath != tc.wantConnection || rep.TransportSetting != tc.setting {
					t.Errorf("debug probe %d: connection_path %q, transport_setting %q; want %q, %q", i+1,
						rep.ConnectionPath, rep.TransportSetting, tc.wantConnection, tc.setting)
				}
			}
			if n := conns.Load(); n != 2 {
				t.Errorf("two debug probes took %d connections, want 2", n)
			}
		})
	}
}

// TestRefusalIsNotAnError: a refused probe (a 404: the probe path is
// wrong, not the backend) is logged as the result it is, at info level; a
// failed one at error level.
func TestRefusalIsNotAnError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		path, class, line string
	}{
		{"/missing", "refused", `level=info backend=a msg="Probe refused" class=refused`},
		{"/down", "failed", `level=error backend=a msg="Probe failed" class=failed reason=http_5xx`},
	} {
		cfg := testconfig.New(config.Backend{Name: "a", URL: srv.URL})
		cfg.HealthProbe.Path = c.path
		code, _, text := get(t, Handler(Options{Pool: newPool(t, cfg)}), "/api/v1/backends/a/probe?format=text")
		if code != http.StatusOK || !strings.Contains(text, c.line) {
			t.Errorf("%s: status %d, want 200 and a log line with %q:\n%s", c.path, code, c.line, text)
		}
	}
}

// TestRefusesCrossSiteRequests: a debug probe a browser asks for on
// behalf of another site's page (an image, a link, a form) is refused
// before the backend is probed, as the admin API refuses other
// cross-origin requests; same-origin browser requests and clients that
// are no browser are served.
func TestRefusesCrossSiteRequests(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(leakyHandler(t, &requests))
	t.Cleanup(srv.Close)
	p := secretPool(t, srv.URL, "/healthz", config.HTTPClientConfig{})
	for _, c := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"cross-site", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"same-site, another origin", map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"an older browser's cross-origin request", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"same origin", map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusOK},
		{"typed in the address bar", map[string]string{"Sec-Fetch-Site": "none"}, http.StatusOK},
		{"no browser", nil, http.StatusOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A handler each time: one limits how often a backend is
			// debugged.
			mux := http.NewServeMux()
			mux.Handle(Pattern, Handler(Options{Pool: p}))
			req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9799/api/v1/backends/a/probe", nil)
			for name, value := range c.header {
				req.Header.Set(name, value)
			}
			before := requests.Load()
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			if rec.Code != c.want {
				t.Errorf("status %d, want %d: %s", rec.Code, c.want, rec.Body)
			}
			if probed := requests.Load() > before; probed != (c.want == http.StatusOK) {
				t.Errorf("the backend was probed: %v, want %v", probed, c.want == http.StatusOK)
			}
		})
	}
}

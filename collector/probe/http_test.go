package probe

import (
	"context"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/internal/deadport"
)

// countingServer is a loopback backend that counts requests and the
// connections they came on, and notifies changed at every change.
type countingServer struct {
	*httptest.Server
	requests    atomic.Int64
	connections atomic.Int64
	closed      atomic.Int64
	changed     signal
}

func startServer(t *testing.T, handler http.HandlerFunc) *countingServer {
	t.Helper()
	s := &countingServer{changed: newSignal()}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		s.changed.notify()
		handler(w, r)
	}))
	s.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		switch state {
		case http.StateNew:
			s.connections.Add(1)
		case http.StateClosed, http.StateHijacked:
			s.closed.Add(1)
		}
		s.changed.notify()
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func TestProbeClassifiesStatus(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status int
		class  health.Class
		reason health.Reason
	}{
		{200, health.ClassOK, health.ReasonNone},
		{204, health.ClassOK, health.ReasonNone},
		{301, health.ClassOK, health.ReasonNone},
		{302, health.ClassOK, health.ReasonNone},
		{399, health.ClassOK, health.ReasonNone},
		{400, health.ClassRefused, health.ReasonNone},
		{401, health.ClassRefused, health.ReasonNone},
		{404, health.ClassRefused, health.ReasonNone},
		{499, health.ClassRefused, health.ReasonNone},
		{501, health.ClassRefused, health.ReasonNone},
		{429, health.ClassFailed, health.ReasonHTTP429},
		{500, health.ClassFailed, health.ReasonHTTP5xx},
		{502, health.ClassFailed, health.ReasonHTTP5xx},
		{503, health.ClassFailed, health.ReasonHTTP5xx},
		{504, health.ClassFailed, health.ReasonHTTP5xx},
		{599, health.ClassFailed, health.ReasonHTTP5xx},
	}
	for _, tc := range cases {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			var gotPath string
			srv := startServer(t, func(w http.ResponseWriter, r *http.Request) {
				gotPath = r.URL.Path
				if tc.status >= 300 && tc.status < 400 {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(tc.status)
				w.Write([]byte("body"))
			})
			before := time.Now()
			r := probeOnce(context.Background(), newClient(t), srv.URL+"/healthz", time.Second)
			if r.Class != tc.class || r.Reason != tc.reason || r.StatusCode != tc.status || r.Err != "" {
				t.Fatalf("got %+v, want class %s reason %q status %d and no error", r, tc.class, tc.reason, tc.status)
			}
			if gotPath != "/healthz" {
				t.Errorf("the backend saw path %q, want /healthz", gotPath)
			}
			if r.Time.Before(before) || r.Time.After(time.Now()) || r.Duration <= 0 || r.Duration > time.Second {
				t.Errorf("time %v (test started %v), duration %v: not the probe's", r.Time, before, r.Duration)
			}
			if n := srv.requests.Load(); n != 1 {
				t.Errorf("the backend got %d requests, want 1 (a redirect is never followed)", n)
			}
		})
	}
}

// hangingServer is a backend that never answers until the client leaves.
func hangingServer(t *testing.T) *countingServer {
	t.Helper()
	return startServer(t, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
}

// checkTimeout checks r is an unanswered timeout that took about
// timeout and whose error mentions errPart.
func checkTimeout(t *testing.T, r health.Result, timeout time.Duration, errPart string) {
	t.Helper()
	if r.Class != health.ClassFailed || r.Reason != health.ReasonTimeout || r.Answered() {
		t.Fatalf("got %+v, want an unanswered timeout", r)
	}
	if r.Duration < timeout || r.Duration > timeout+time.Second {
		t.Errorf("the probe took %v, want about its %v timeout", r.Duration, timeout)
	}
	if !strings.Contains(r.Err, errPart) {
		t.Errorf("error %q does not mention %q", r.Err, errPart)
	}
}

func TestProbeTimesOut(t *testing.T) {
	t.Parallel()
	srv := hangingServer(t)
	timeout := 100 * time.Millisecond
	r := probeOnce(context.Background(), newClient(t), srv.URL+"/healthz", timeout)
	checkTimeout(t, r, timeout, "probe timeout of 100ms")
}

func TestProbeTransportFailures(t *testing.T) {
	reset := startServer(t, func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		// A zero linger turns the close into a TCP reset.
		conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
	})
	tlsBackend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	tlsBackend.Config.ErrorLog = stdlog.New(io.Discard, "", 0)
	tlsBackend.StartTLS()
	defer tlsBackend.Close()
	cases := []struct {
		name, url, errPart string
	}{
		{"connection refused", deadport.URL(t) + "/healthz", "connection refused"},
		{"connection reset", reset.URL + "/healthz", ""},
		{"untrusted certificate", tlsBackend.URL + "/healthz", "certificate"},
		{"unsupported scheme", "ftp://127.0.0.1:1/healthz", "scheme"},
		{"unparseable url", "http://127.0.0.1:port/healthz", "port"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Each fails long before a timeout that only a TLS handshake
			// on a loaded machine under the race detector could reach.
			r := probeOnce(context.Background(), newClient(t), tc.url, 5*time.Second)
			if r.Class != health.ClassFailed || r.Reason != health.ReasonTransport || r.Answered() || r.Err == "" {
				t.Fatalf("got %+v, want an unanswered transport failure with an error", r)
			}
			if !strings.Contains(r.Err, tc.errPart) {
				t.Errorf("error %q does not mention %q", r.Err, tc.errPart)
			}
			if r.Time.IsZero() {
				t.Error("the result has no time")
			}
		})
	}
}

func TestProbeReusesItsConnection(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name            string
		body            string
		wantConnections int64
	}{
		{"small body", "ok", 1},
		{"body of exactly the limit", strings.Repeat("x", maxBodyBytes), 1},
		{"body over the limit", strings.Repeat("x", maxBodyBytes+1), 3},
	}
	for _, path := range probePaths() {
		for _, tc := range cases {
			t.Run(path.name+"/"+tc.name, func(t *testing.T) {
				srv := startServer(t, func(w http.ResponseWriter, r *http.Request) {
					// With its length known the body's end comes with its last
					// byte; a chunked body of exactly the limit would need one
					// read more, which the probe does not make.
					w.Header().Set("Content-Length", strconv.Itoa(len(tc.body)))
					w.Write([]byte(tc.body))
				})
				target := httpTarget(t, newClient(t), srv.URL+"/healthz", time.Second, path)
				for range 3 {
					if r := target.run(t.Context(), time.Now); r.Class != health.ClassOK {
						t.Fatalf("got %+v, want ok", r)
					}
				}
				if n := srv.connections.Load(); n != tc.wantConnections {
					t.Errorf("3 probes used %d connections, want %d", n, tc.wantConnections)
				}
			})
		}
	}
}

// A keep-alive connection the backend closed while idle is no failure:
// the probe retries on a new connection.
func TestProbeSurvivesBackendClosingIdleConnection(t *testing.T) {
	t.Parallel()
	for _, path := range probePaths() {
		t.Run(path.name, func(t *testing.T) {
			srv := startServer(t, func(w http.ResponseWriter, r *http.Request) {})
			target := httpTarget(t, newClient(t), srv.URL+"/healthz", time.Second, path)
			for i := range 3 {
				if r := target.run(t.Context(), time.Now); r.Class != health.ClassOK {
					t.Fatalf("probe %d: got %+v, want ok", i, r)
				}
				srv.CloseClientConnections()
				// The next probe comes once the backend has closed the
				// connection. Whether the client has seen the close by
				// then or finds out when it sends, the probe must go out
				// on a new connection.
				await(t, "the backend closed the connection", srv.changed, func() bool { return srv.closed.Load() == int64(i+1) })
			}
			if n := srv.requests.Load(); n != 3 {
				t.Errorf("the backend got %d requests, want 3", n)
			}
		})
	}
}

func TestProbeCancelledByContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The backend cancels the probe once it has the request, and then
	// never answers.
	srv := startServer(t, func(w http.ResponseWriter, r *http.Request) {
		cancel()
		<-r.Context().Done()
	})
	r := probeOnce(ctx, newClient(t), srv.URL+"/healthz", time.Minute)
	if r.Class != health.ClassFailed || r.Reason != health.ReasonTransport {
		t.Fatalf("got %+v, want a transport failure", r)
	}
	if r.Duration > 5*time.Second {
		t.Errorf("the cancelled probe took %v", r.Duration)
	}
}

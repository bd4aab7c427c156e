package probe

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/deadport"
	"github.com/probegate/probegate/internal/silentport"
	"github.com/probegate/probegate/internal/testpki"
)

// wantResult is the class, reason, answered and Status a result must have.
type wantResult struct {
	class    health.Class
	reason   health.Reason
	answered bool
	status   string
}

func (w wantResult) check(t *testing.T, r health.Result) {
	t.Helper()
	if r.Class != w.class || r.Reason != w.reason || r.Answered() != w.answered || r.Status != w.status {
		t.Errorf("got %v/%v answered=%v status=%q (err %q), want %v/%v answered=%v status=%q",
			r.Class, r.Reason, r.Answered(), r.Status, r.Err, w.class, w.reason, w.answered, w.status)
	}
}

func grpcKind(service string) func(*config.HealthProbe) {
	return func(p *config.HealthProbe) { p.Kind, p.GRPCService = config.KindGRPC, service }
}

func TestGRPCProbeClasses(t *testing.T) {
	pki := testpki.New(t)
	h := standardHealth()
	withHealth := startGRPC(t, h, nil)
	withoutHealth := startGRPC(t, nil, nil)
	overTLS := startGRPC(t, standardHealth(), &pki.Server)
	trustCA := config.HTTPClientConfig{TLSConfig: commoncfg.TLSConfig{CAFile: pki.CAFile}}

	ok := wantResult{health.ClassOK, health.ReasonNone, true, "SERVING"}
	notServing := wantResult{health.ClassFailed, health.ReasonGRPCNotServing, true, "NOT_SERVING"}

	t.Run("SERVING then NOT_SERVING then SERVING on one connection", func(t *testing.T) {
		target := newTarget(t, withHealth, grpcKind("pdb.v1.Query"), config.HTTPClientConfig{})
		ok.check(t, runTarget(target))
		h.SetServingStatus("pdb.v1.Query", healthpb.HealthCheckResponse_NOT_SERVING)
		notServing.check(t, runTarget(target))
		h.SetServingStatus("pdb.v1.Query", healthpb.HealthCheckResponse_SERVING)
		ok.check(t, runTarget(target))
	})
	t.Run("the server as a whole", func(t *testing.T) {
		ok.check(t, runTarget(newTarget(t, withHealth, grpcKind(""), config.HTTPClientConfig{})))
	})
	t.Run("unknown service is refused", func(t *testing.T) {
		wantResult{health.ClassRefused, health.ReasonNone, true, "NOT_FOUND"}.check(t,
			runTarget(newTarget(t, withHealth, grpcKind("no.such.Service"), config.HTTPClientConfig{})))
	})
	t.Run("no health service is refused", func(t *testing.T) {
		wantResult{health.ClassRefused, health.ReasonNone, true, "UNIMPLEMENTED"}.check(t,
			runTarget(newTarget(t, withoutHealth, grpcKind(""), config.HTTPClientConfig{})))
	})
	t.Run("connection refused is a transport failure", func(t *testing.T) {
		wantResult{health.ClassFailed, health.ReasonTransport, false, ""}.check(t,
			runTarget(newTarget(t, deadport.URL(t), grpcKind(""), config.HTTPClientConfig{})))
	})
	t.Run("a server that never answers times out", func(t *testing.T) {
		r := runTarget(newTarget(t, "http://"+silentport.Listen(t), withTimeout(grpcKind(""), 100*time.Millisecond), config.HTTPClientConfig{}))
		wantResult{health.ClassFailed, health.ReasonTimeout, false, ""}.check(t, r)
		if r.Duration > 5*time.Second {
			t.Errorf("the probe took %v, want about its 100ms timeout", r.Duration)
		}
	})
	t.Run("TLS with the backend's CA", func(t *testing.T) {
		ok.check(t, runTarget(newTarget(t, overTLS, grpcKind("pdb.v1.Query"), trustCA)))
	})
	t.Run("TLS without trusting the CA is a transport failure", func(t *testing.T) {
		// The handshake fails at once; a loaded machine under the race
		// detector must not turn the failure into a timeout.
		r := runTarget(newTarget(t, overTLS, withTimeout(grpcKind(""), 5*time.Second), config.HTTPClientConfig{}))
		wantResult{health.ClassFailed, health.ReasonTransport, false, ""}.check(t, r)
		if !strings.Contains(r.Err, "certificate") {
			t.Errorf("error %q does not say the certificate is the problem", r.Err)
		}
	})
	t.Run("plaintext to a TLS server is a transport failure", func(t *testing.T) {
		plain := "http://" + strings.TrimPrefix(overTLS, "https://")
		wantResult{health.ClassFailed, health.ReasonTransport, false, ""}.check(t,
			runTarget(newTarget(t, plain, grpcKind(""), config.HTTPClientConfig{})))
	})
}

func TestTCPProbeClasses(t *testing.T) {
	tcp := func(p *config.HealthProbe) { p.Kind = config.KindTCP }
	t.Run("accepted", func(t *testing.T) {
		srv := startServer(t, func(http.ResponseWriter, *http.Request) {})
		wantResult{health.ClassOK, health.ReasonNone, true, "connected"}.check(t,
			runTarget(newTarget(t, srv.URL, tcp, config.HTTPClientConfig{})))
		// The probe closes its connection at once and sends nothing.
		if n := srv.requests.Load(); n != 0 {
			t.Errorf("a tcp probe sent %d HTTP requests", n)
		}
	})
	t.Run("refused", func(t *testing.T) {
		wantResult{health.ClassFailed, health.ReasonTransport, false, ""}.check(t,
			runTarget(newTarget(t, deadport.URL(t), tcp, config.HTTPClientConfig{})))
	})
	t.Run("never accepted", func(t *testing.T) {
		url := fullBacklogURL(t)
		r := runTarget(newTarget(t, url, withTimeout(tcp, 100*time.Millisecond), config.HTTPClientConfig{}))
		wantResult{health.ClassFailed, health.ReasonTimeout, false, ""}.check(t, r)
	})
}

func TestHTTPProbeOptions(t *testing.T) {
	var (
		mu   sync.Mutex
		seen *http.Request
	)
	srv := startServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = r.Clone(r.Context())
		mu.Unlock()
		if r.URL.Path == "/down" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		io.WriteString(w, `{"status": "up", "padding": "`+strings.Repeat("x", 70<<10)+`", "late": "match"}`)
	})
	lastRequest := func() *http.Request {
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
	with := func(method, path, re string, headers map[string]string) func(*config.HealthProbe) {
		return func(p *config.HealthProbe) {
			p.Method, p.Path, p.ExpectBodyRegexp, p.Headers = method, path, re, headers
		}
	}
	cases := []struct {
		name string
		set  func(*config.HealthProbe)
		want wantResult
	}{
		{"body matches", with("GET", "/healthz", `"status":\s*"up"`, nil), wantResult{health.ClassOK, health.ReasonNone, true, ""}},
		{"body does not match", with("GET", "/healthz", `"status":\s*"down"`, nil), wantResult{health.ClassFailed, health.ReasonBodyMismatch, true, ""}},
		{"only the first 64 KiB are matched", with("GET", "/healthz", `"late"`, nil), wantResult{health.ClassFailed, health.ReasonBodyMismatch, true, ""}},
		{"a 503 stays a 503 whatever the body", with("GET", "/down", `"status":\s*"up"`, nil), wantResult{health.ClassFailed, health.ReasonHTTP5xx, true, ""}},
		{"HEAD", with("HEAD", "/healthz", "", nil), wantResult{health.ClassOK, health.ReasonNone, true, ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runTarget(newTarget(t, srv.URL, c.set, config.HTTPClientConfig{}))
			c.want.check(t, r)
		})
	}
	if m := lastRequest().Method; m != http.MethodHead {
		t.Errorf("the HEAD probe reached the server as %s", m)
	}

	t.Run("headers and Host reach the server", func(t *testing.T) {
		headers := map[string]string{"host": "pdb.example:8081", "X-Probe-Token": "t0k3n"}
		r := runTarget(newTarget(t, srv.URL, with("GET", "/healthz", "", headers), config.HTTPClientConfig{}))
		wantResult{health.ClassOK, health.ReasonNone, true, ""}.check(t, r)
		got := lastRequest()
		if got.Host != "pdb.example:8081" || got.Header.Get("X-Probe-Token") != "t0k3n" || got.Method != http.MethodGet {
			t.Errorf("the server saw %s Host %q X-Probe-Token %q", got.Method, got.Host, got.Header.Get("X-Probe-Token"))
		}
	})
}

package pool

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/collector/health"
)

// TestApplyKeepsUnchangedBackendObject: a backend whose name, url, probe
// settings and client configuration are unchanged stays the same object
// (so a probe in flight still lands on it), with its client and state.
func TestApplyKeepsUnchangedBackendObject(t *testing.T) {
	p := newPool(t, numberedTargets(2), Settings{})
	before := p.Backends()
	feed(before[0], health.StatusResult(200), 1)
	feed(before[1], health.StatusResult(503), 3)

	// Equal by value, not the same values: a reload parses a new config.
	next := numberedTargets(2)
	next[0].URL += "/" // a trailing slash is ignored
	if err := p.Apply(next, Settings{PanicThreshold: 10}); err != nil {
		t.Fatal(err)
	}
	after := p.Backends()
	for i := range after {
		if after[i] != before[i] {
			t.Errorf("backend %s: a new object after a reload that changed nothing", after[i].Name)
		}
		if after[i].Client != before[i].Client {
			t.Errorf("backend %s: a new client after a reload that changed nothing", after[i].Name)
		}
	}
	if s := after[0].Snapshot(); s.Health.State != health.StateHealthy || s.Probes != 1 {
		t.Errorf("b0 after reload: %+v", s)
	}
	if s := after[1].Snapshot(); s.Health.State != health.StateUnhealthy || s.Probes != 3 {
		t.Errorf("b1 after reload: %+v", s)
	}
}

// authServer is a loopback backend that records the Authorization header
// of each request.
type authServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newAuthServer(t *testing.T) *authServer {
	t.Helper()
	s := &authServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Header.Get("Authorization"))
		s.mu.Unlock()
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *authServer) last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.seen) == 0 {
		return ""
	}
	return s.seen[len(s.seen)-1]
}

// get sends one GET through the backend's client.
func get(t *testing.T, b *Backend) {
	t.Helper()
	resp, err := b.Client.Get(b.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// TestApplySendsChangedSecret: a reload that changes only a secret (an
// inline basic-auth password, a bearer token) gives the backend a new
// client, which sends the new secret, while its state carries over. The
// printed form of the configuration hides secrets, so comparing that
// would keep the client with the old secret.
func TestApplySendsChangedSecret(t *testing.T) {
	for _, c := range []struct {
		name       string
		set        func(cfg *commoncfg.HTTPClientConfig, secret string)
		oldH, newH string
	}{
		{"basic auth password", func(cfg *commoncfg.HTTPClientConfig, secret string) {
			cfg.BasicAuth = &commoncfg.BasicAuth{Username: "probe", Password: commoncfg.Secret(secret)}
		}, "Basic cHJvYmU6b2xk", "Basic cHJvYmU6bmV3"}, // probe:old, probe:new
		{"bearer token", func(cfg *commoncfg.HTTPClientConfig, secret string) {
			cfg.Authorization = &commoncfg.Authorization{Type: "Bearer", Credentials: commoncfg.Secret(secret)}
		}, "Bearer old", "Bearer new"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newAuthServer(t)
			targets := []Target{probedTarget("b0", srv.URL)}
			c.set(&targets[0].ClientConfig, "old")
			p := newPool(t, targets, Settings{})
			before := p.Backends()[0]
			t.Cleanup(func() { before.Client.CloseIdleConnections() })
			feed(before, health.StatusResult(200), 1)
			get(t, before)
			if got := srv.last(); got != c.oldH {
				t.Fatalf("before the reload the backend saw %q, want %q", got, c.oldH)
			}

			targets = []Target{probedTarget("b0", srv.URL)}
			c.set(&targets[0].ClientConfig, "new")
			if err := p.Apply(targets, Settings{}); err != nil {
				t.Fatal(err)
			}
			after := p.Backends()[0]
			t.Cleanup(func() { after.Client.CloseIdleConnections() })
			if after.Client == before.Client {
				t.Fatal("the secret changed but the backend kept its client")
			}
			if s := after.Snapshot(); s.Health.State != health.StateHealthy || s.Probes != 1 {
				t.Errorf("a secret change lost the backend's state: %+v", s)
			}
			get(t, after)
			if got := srv.last(); got != c.newH {
				t.Errorf("after the reload the backend saw %q, want the new secret %q", got, c.newH)
			}
		})
	}
}

// TestApplySharesClientsByConfig: backends with equal client configurations
// share one client; the cache holds one client per distinct configuration
// and drops those no backend uses any more.
func TestApplySharesClientsByConfig(t *testing.T) {
	withToken := func(t Target, token string) Target {
		t.ClientConfig.Authorization = &commoncfg.Authorization{Type: "Bearer", Credentials: commoncfg.Secret(token)}
		return t
	}
	targets := numberedTargets(4)
	targets[2] = withToken(targets[2], "x")
	targets[3] = withToken(targets[3], "x")
	p := newPool(t, targets, Settings{})
	bs := p.Backends()
	if bs[0].Client != bs[1].Client || bs[2].Client != bs[3].Client {
		t.Error("backends with equal client configurations do not share a client")
	}
	if bs[0].Client == bs[2].Client {
		t.Error("backends with different client configurations share a client")
	}
	if got := p.clients.Len(); got != 2 {
		t.Errorf("%d clients for 2 distinct configurations", got)
	}

	// b2 and b3 move to a third configuration: the one with token x is
	// unused and dropped.
	targets = numberedTargets(4)
	targets[2] = withToken(targets[2], "y")
	targets[3] = withToken(targets[3], "y")
	if err := p.Apply(targets, Settings{}); err != nil {
		t.Fatal(err)
	}
	after := p.Backends()
	if after[0].Client != bs[0].Client || after[2].Client != after[3].Client || after[2].Client == bs[2].Client {
		t.Error("clients after the reload are not shared by configuration")
	}
	if got := p.clients.Len(); got != 2 {
		t.Errorf("%d clients after the reload, want 2 (the unused one dropped)", got)
	}

	if err := p.Apply(nil, Settings{}); err != nil {
		t.Fatal(err)
	}
	if got := p.clients.Len(); got != 0 {
		t.Errorf("%d clients for an empty pool", got)
	}
}

// connWatch records the connection states an httptest server goes
// through.
type connWatch struct {
	mu     sync.Mutex
	closed map[net.Conn]bool
	opened []net.Conn
}

func newWatchedServer(t *testing.T) (*httptest.Server, *connWatch) {
	t.Helper()
	w := &connWatch{closed: map[net.Conn]bool{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		w.mu.Lock()
		defer w.mu.Unlock()
		switch s {
		case http.StateNew:
			w.opened = append(w.opened, c)
		case http.StateClosed, http.StateHijacked:
			w.closed[c] = true
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, w
}

// counts returns how many connections were opened and how many closed.
func (w *connWatch) counts() (opened, closed int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.opened), len(w.closed)
}

// waitClosed waits up to 2s for the server to see n connections closed.
func (w *connWatch) waitClosed(n int) bool {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, closed := w.counts(); closed >= n {
			return true
		}
	}
	return false
}

// getReused sends one GET through the backend's client and reports
// whether it went over a kept-alive connection.
func getReused(t *testing.T, b *Backend) bool {
	t.Helper()
	var reused bool
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodGet, b.URL+"/healthz", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := b.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return reused
}

// TestApplyClosesConnectionsOfGoneHosts: a reload that removes the only
// backend on a host closes the kept-alive connections to it at once,
// rather than leaving them to the idle timeout, and leaves the connections
// to hosts other backends still use alone, also when the backends share a
// client.
func TestApplyClosesConnectionsOfGoneHosts(t *testing.T) {
	gone, goneConns := newWatchedServer(t)
	kept, keptConns := newWatchedServer(t)
	targets := []Target{probedTarget("gone", gone.URL), probedTarget("kept", kept.URL), probedTarget("kept-too", kept.URL+"/other")}
	p := newPool(t, targets, Settings{})
	bs := p.Backends()
	if bs[0].Client != bs[1].Client {
		t.Fatal("the test wants the backends to share one client")
	}
	t.Cleanup(func() { bs[0].Client.CloseIdleConnections() })
	getReused(t, bs[0])
	getReused(t, bs[1])
	if opened, closed := goneConns.counts(); opened != 1 || closed != 0 {
		t.Fatalf("gone host: %d connections opened, %d closed; want 1 kept alive", opened, closed)
	}

	// "kept" goes too, but "kept-too" is on the same host.
	if err := p.Apply(targets[2:], Settings{}); err != nil {
		t.Fatal(err)
	}
	if !goneConns.waitClosed(1) {
		t.Error("the connection to the host no backend uses was not closed within 2s")
	}
	if !getReused(t, p.Backends()[0]) {
		t.Error("the connection to a host still in use was closed")
	}
	if opened, closed := keptConns.counts(); opened != 1 || closed != 0 {
		t.Errorf("host still in use: %d connections opened, %d closed; want the one kept alive", opened, closed)
	}
}

// TestApplyErrorLeavesPoolUnchanged: a reload with a client configuration
// that cannot be built (a CA file that does not exist) fails and changes
// nothing: same backends, same clients, same state, same settings.
func TestApplyErrorLeavesPoolUnchanged(t *testing.T) {
	p := newPool(t, numberedTargets(2), Settings{PanicThreshold: 60})
	before := p.Backends()
	feed(before[0], health.StatusResult(503), 3)
	clients := p.clients.Len()

	next := numberedTargets(3)
	next[0].ClientConfig.BearerToken = "changed" // a new client that must not leak
	next[2].ClientConfig.TLSConfig.CAFile = filepath.Join(t.TempDir(), "missing-ca.pem")
	err := p.Apply(next, Settings{})
	if err == nil || !strings.Contains(err.Error(), `"b2"`) {
		t.Fatalf("Apply = %v, want an error naming backend b2", err)
	}
	after := p.Backends()
	if len(after) != 2 || after[0] != before[0] || after[1] != before[1] || after[0].Client != before[0].Client {
		t.Errorf("a failed reload changed the backends: %v", names(after))
	}
	if s := after[0].Snapshot(); s.Health.State != health.StateUnhealthy || s.Probes != 3 {
		t.Errorf("a failed reload changed b0's state: %+v", s)
	}
	// The settings stayed: with b0 out, 1 of 2 in service is below 60%.
	if _, _, _, failOpen := p.Selection(); !failOpen {
		t.Error("a failed reload changed the settings")
	}
	if got := p.clients.Len(); got != clients {
		t.Errorf("a failed reload left %d clients in the cache, want %d", got, clients)
	}
}

// TestApplyRefusesDuplicateNames: names identify backends (state, series,
// the API), so a second target of the same name is an error and the pool
// stays as it was.
func TestApplyRefusesDuplicateNames(t *testing.T) {
	p := newPool(t, namedTargets("a"), Settings{})
	before := p.Backends()[0]
	targets := append(namedTargets("a", "b"), probedTarget("a", "http://127.0.0.1:19999"))
	err := p.Apply(targets, Settings{})
	if err == nil || !strings.Contains(err.Error(), `two backends are named "a"`) {
		t.Fatalf("Apply with a duplicate name = %v, want an error naming it", err)
	}
	if got := p.Backends(); len(got) != 1 || got[0] != before {
		t.Errorf("pool changed by a refused Apply: %v", got)
	}
}

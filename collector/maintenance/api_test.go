package maintenance

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// apiTestPool is a pool of healthy probed backends a, b and c whose budget
// allows `allowed` disruptions, behind an enabled API.
func apiTestPool(t *testing.T, allowed int) (*pool.Pool, *API, *http.ServeMux) {
	t.Helper()
	probe := config.HealthProbe{Enabled: true, Path: "/healthz", Interval: model.Duration(5 * time.Second),
		Timeout: model.Duration(time.Second), Failures: 3, Successes: 2}
	var targets []pool.Target
	for i, name := range []string{"a", "b", "c"} {
		targets = append(targets, pool.Target{Name: name, URL: "http://127.0.0.1:1900" + string(rune('1'+i)),
			Probe: probe, ClientConfig: commoncfg.DefaultHTTPClientConfig})
	}
	p := pool.New(nil, nil)
	s := pool.Settings{Readiness: config.Readiness{MinAvailable: &config.IntOrPercent{Value: 3 - allowed}}}
	if err := p.Apply(targets, s); err != nil {
		t.Fatal(err)
	}
	for _, b := range p.Backends() {
		b.Record(health.StatusResult(200))
	}
	api := NewAPI(p, true, prometheus.NewRegistry(), nil)
	mux := http.NewServeMux()
	api.Register(mux)
	return p, api, mux
}

func do(mux http.Handler, method, target, body string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	return w
}

// TestAPIDisabledForbids: without the flag every path answers 403 with a
// JSON error that names the flag.
func TestAPIDisabledForbids(t *testing.T) {
	p, _, _ := apiTestPool(t, 1)
	mux := http.NewServeMux()
	NewAPI(p, false, prometheus.NewRegistry(), nil).Register(mux)
	for _, req := range [][2]string{{"GET", "/api/v1/backends"}, {"POST", "/api/v1/backends/a/maintenance"}, {"DELETE", "/api/v1/backends/a/maintenance"}} {
		w := do(mux, req[0], req[1], `{"reason":"x"}`)
		if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "--web.enable-admin-api") {
			t.Errorf("%s %s: %d %s", req[0], req[1], w.Code, w.Body)
		}
	}
	if len(p.Maintenances()) != 0 {
		t.Error("a disabled API changed something")
	}
}

// TestAPIRefusesWithBudgetNumbers: a request the budget does not allow is
// answered 429 with Retry-After and the numbers, counted, and changes
// nothing; force overrides it.
func TestAPIRefusesWithBudgetNumbers(t *testing.T) {
	p, api, mux := apiTestPool(t, 0)
	w := do(mux, "POST", "/api/v1/backends/a/maintenance", `{"reason":"disk"}`)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "5" {
		t.Fatalf("got %d Retry-After %q: %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	var got pool.Budget
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if want := (pool.Budget{Expected: 3, CurrentHealthy: 3, DesiredHealthy: 3}); got != want {
		t.Errorf("budget %+v, want %+v", got, want)
	}
	if n := testutil.ToFloat64(api.refusals); n != 1 {
		t.Errorf("refusals %v, want 1", n)
	}
	if p.Backends()[0].Health().State != health.StateHealthy || len(p.Maintenances()) != 0 {
		t.Error("a refused request changed the pool")
	}
	if w := do(mux, "POST", "/api/v1/backends/a/maintenance?force=true", `{"reason":"disk"}`); w.Code != http.StatusOK ||
		!strings.Contains(w.Body.String(), `"forced": true`) {
		t.Errorf("forced: %d %s", w.Code, w.Body)
	}
}

// TestAPIEnterListExit: a granted request puts the backend in maintenance
// with reason, until and by (the basic-auth user); the list shows it;
// DELETE ends it.
func TestAPIEnterListExit(t *testing.T) {
	p, api, mux := apiTestPool(t, 1)
	now := time.Now().Round(0)
	api.now = func() time.Time { return now }
	r := httptest.NewRequest("POST", "/api/v1/backends/b/maintenance", strings.NewReader(`{"reason":" kernel ","ttl":"2h"}`))
	r.SetBasicAuth("alice", "secret")
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("POST: %d %s", w.Code, w.Body)
	}
	m := p.Maintenances()
	if len(m) != 1 || m[0].Reason != "kernel" || m[0].By != "alice" || !m[0].Until.Equal(now.Add(2*time.Hour)) {
		t.Errorf("entry %+v", m)
	}

	w = do(mux, "GET", "/api/v1/backends", "")
	var list listView
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || w.Code != http.StatusOK {
		t.Fatalf("list: %d %v", w.Code, err)
	}
	if b := list.Backends[1]; b.State != "maintenance" || b.InService || b.Maintenance == nil || b.Maintenance.By != "alice" {
		t.Errorf("listed %+v", b)
	}
	if list.Backends[0].Maintenance != nil || list.Readiness.CurrentHealthy != 2 {
		t.Errorf("listed %+v, readiness %+v", list.Backends[0], list.Readiness)
	}

	w = do(mux, "DELETE", "/api/v1/backends/b/maintenance", "")
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"state": "unhealthy"`) {
		t.Errorf("DELETE: %d %s", w.Code, w.Body)
	}
	if len(p.Maintenances()) != 0 {
		t.Error("entry kept after DELETE")
	}
}

// TestAPIBadRequests: bad input gets 4xx saying what is wrong, and changes
// nothing.
func TestAPIBadRequests(t *testing.T) {
	p, _, mux := apiTestPool(t, 3)
	for _, c := range []struct {
		target, body string
		code         int
		says         string
	}{
		{"/api/v1/backends/a/maintenance", `{}`, 400, "reason is required"},
		{"/api/v1/backends/a/maintenance", `{"reason":"x","ttl":"soon"}`, 400, "soon"},
		{"/api/v1/backends/a/maintenance", `{"reason":"x","ttl":"-1h"}`, 400, "ttl"},
		{"/api/v1/backends/a/maintenance", `{"reason":"x","extra":1}`, 400, "extra"},
		{"/api/v1/backends/a/maintenance?force=maybe", `{"reason":"x"}`, 400, "force"},
		{"/api/v1/backends/zz/maintenance", `{"reason":"x"}`, 404, "zz"},
	} {
		w := do(mux, "POST", c.target, c.body)
		if w.Code != c.code || !strings.Contains(w.Body.String(), c.says) {
			t.Errorf("POST %s %s: %d %s, want %d saying %q", c.target, c.body, w.Code, w.Body, c.code, c.says)
		}
	}
	if w := do(mux, "PUT", "/api/v1/backends/a/maintenance", ""); w.Code != 405 {
		t.Errorf("PUT: %d", w.Code)
	}
	if len(p.Maintenances()) != 0 {
		t.Error("a bad request changed something")
	}
}

// TestAPILoopbackOnly: restricted to loopback, the API refuses a client
// from another address and serves one on loopback.
func TestAPILoopbackOnly(t *testing.T) {
	_, api, mux := apiTestPool(t, 3)
	api.RestrictToLoopback()
	r := httptest.NewRequest("GET", "/api/v1/backends", nil)
	r.RemoteAddr = "192.0.2.7:4242"
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	if w.Code != http.StatusForbidden {
		t.Errorf("remote client: %d", w.Code)
	}
	r.RemoteAddr = "[::1]:4242"
	w = httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Errorf("loopback client: %d %s", w.Code, w.Body)
	}
}

// TestAPIRefusesCrossOrigin: a browser's cross-site POST is refused.
func TestAPIRefusesCrossOrigin(t *testing.T) {
	p, _, mux := apiTestPool(t, 3)
	w := do(mux, "POST", "/api/v1/backends/a/maintenance", `{"reason":"x"}`, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	if w.Code != http.StatusForbidden || len(p.Maintenances()) != 0 {
		t.Errorf("cross-site POST: %d %s", w.Code, w.Body)
	}
}

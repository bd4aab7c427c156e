package maintenance

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/probegate/probegate/collector/admin"
	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/fleet"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/maintenance/store"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/internal/jsonanswer"
	"github.com/probegate/probegate/internal/testclock"
)

// defaultMaxTTL is maintenance.max_ttl's default.
const defaultMaxTTL = 8760 * time.Hour

// apiFixture is an admin API over a pool of healthy probed backends a, b
// and c, whose entries are kept in a file store in dir.
type apiFixture struct {
	pool    *pool.Pool
	manager *Manager
	api     *API
	mux     *http.ServeMux
	dir     string
	clock   *testclock.Clock
}

// newAPIFixture builds the fixture over a new file store, with a budget
// that allows `allowed` disruptions, behind an API with opts (MaxTTL
// defaults to defaultMaxTTL).
func newAPIFixture(t *testing.T, allowed int, opts APIOptions) *apiFixture {
	t.Helper()
	dir := t.TempDir()
	fs, err := store.OpenFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	return newAPIFixtureOver(t, allowed, opts, fs, dir)
}

func newAPIFixtureOver(t *testing.T, allowed int, opts APIOptions, s store.Store, dir string) *apiFixture {
	t.Helper()
	clock := testclock.New(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	p := healthyPool(t, []string{"a", "b", "c"}, allowed, clock.Now)
	m, _ := startManager(t, p, s, clock.Now)
	if opts.MaxTTL == 0 {
		opts.MaxTTL = defaultMaxTTL
	}
	api := NewAPI(m, opts, nil)
	mux := http.NewServeMux()
	api.Register(mux)
	return &apiFixture{pool: p, manager: m, api: api, mux: mux, dir: dir, clock: clock}
}

// request is one request to the API; the zero remote is httptest's
// 192.0.2.1:1234.
type request struct {
	method, target, body string
	remote               string
	user, password       string
	header               []string
}

func (f *apiFixture) do(r request) *httptest.ResponseRecorder {
	req := httptest.NewRequest(r.method, r.target, strings.NewReader(r.body))
	// The admin listener answers requests for its address alone.
	req.Host = "127.0.0.1:9799"
	if r.remote != "" {
		req.RemoteAddr = r.remote
	}
	if r.user != "" {
		req.SetBasicAuth(r.user, r.password)
	}
	for i := 0; i+1 < len(r.header); i += 2 {
		req.Header.Set(r.header[i], r.header[i+1])
	}
	w := httptest.NewRecorder()
	f.mux.ServeHTTP(w, req)
	return w
}

func (f *apiFixture) post(target, body string) *httptest.ResponseRecorder {
	return f.do(request{method: http.MethodPost, target: target, body: body})
}

// fileEntries reads back what the state file holds, through a store of
// its own.
func (f *apiFixture) fileEntries(t *testing.T) []entries.Entry {
	t.Helper()
	fs, err := store.OpenFile(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := fs.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return st.Entries
}

// TestAPIDisabledForbids: without the flag every path answers 403 with a
// JSON error that names the flag, and nothing changes.
func TestAPIDisabledForbids(t *testing.T) {
	f := newAPIFixture(t, 1, APIOptions{})
	for _, req := range [][2]string{
		{"GET", "/api/v1/backends"}, {"GET", "/api/v1/replicas"},
		{"POST", "/api/v1/backends/a/maintenance"}, {"DELETE", "/api/v1/backends/a/maintenance"},
	} {
		w := f.do(request{method: req[0], target: req[1], body: `{"reason":"x"}`})
		var e jsonanswer.Error
		if w.Code != http.StatusForbidden || json.Unmarshal(w.Body.Bytes(), &e) != nil || !strings.Contains(e.Error, "--web.enable-admin-api") {
			t.Errorf("%s %s: %d %s", req[0], req[1], w.Code, w.Body)
		}
	}
	if len(f.pool.Maintenances()) != 0 || len(f.fileEntries(t)) != 0 {
		t.Error("a disabled API changed something")
	}
}

// TestAPIRefusesWithBudgetNumbers: a request the budget does not allow is
// answered 429 with Retry-After (the probe interval) and the budget's
// numbers, counted, and changes nothing, in the pool or the store; force
// overrides it.
func TestAPIRefusesWithBudgetNumbers(t *testing.T) {
	f := newAPIFixture(t, 0, APIOptions{Guard: admin.Guard{EnableAdminAPI: true}})
	w := f.post("/api/v1/backends/a/maintenance", `{"reason":"disk"}`)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "5" {
		t.Fatalf("got %d Retry-After %q: %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	var got Refused
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if want := (budget.Budget{Expected: 3, CurrentHealthy: 3, DesiredHealthy: 3}); got.Budget != want || got.Error == "" {
		t.Errorf("refusal %+v, want budget %+v and an error", got, want)
	}
	if n := testutil.ToFloat64(f.manager.metrics.refusals); n != 1 {
		t.Errorf("refusals %v, want 1", n)
	}
	if f.pool.Backends()[0].Served().State() != health.ServedHealthy || len(f.pool.Maintenances()) != 0 || len(f.fileEntries(t)) != 0 {
		t.Error("a refused request changed the pool or the store")
	}

	w = f.post("/api/v1/backends/a/maintenance?force=true", `{"reason":"disk"}`)
	var entered Entered
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &entered) != nil || !entered.Forced {
		t.Fatalf("forced: %d %s", w.Code, w.Body)
	}
	if stored := f.fileEntries(t); len(stored) != 1 || stored[0].Backend != "a" {
		t.Errorf("forced entry not stored: %+v", stored)
	}
}

// TestAPIEnterListExit: a granted request puts the backend in maintenance
// with reason, until and by (the authenticated user), and the store holds
// it; the list shows it and the store's health; DELETE ends it, in the
// pool and the store.
func TestAPIEnterListExit(t *testing.T) {
	f := newAPIFixture(t, 1, APIOptions{Guard: admin.Guard{EnableAdminAPI: true}, Authenticated: true})
	now := f.clock.Now()
	w := f.do(request{method: "POST", target: "/api/v1/backends/b/maintenance", body: `{"reason":" kernel ","ttl":"2h"}`,
		user: "alice", password: "secret"})
	if w.Code != http.StatusOK {
		t.Fatalf("POST: %d %s", w.Code, w.Body)
	}
	var entered Entered
	if err := json.Unmarshal(w.Body.Bytes(), &entered); err != nil {
		t.Fatal(err)
	}
	if entered.State != "maintenance" || entered.Forced || entered.Readiness.CurrentHealthy != 2 {
		t.Errorf("answer %+v", entered)
	}
	m := f.pool.Maintenances()
	if len(m) != 1 || m[0].Reason != "kernel" || m[0].By != "alice" || !m[0].Until.Equal(now.Add(2*time.Hour)) || !m[0].Since.Equal(now) {
		t.Errorf("entry %+v", m)
	}
	if stored := f.fileEntries(t); len(stored) != 1 || stored[0].Backend != "b" || stored[0].By != "alice" {
		t.Errorf("stored %+v", stored)
	}

	w = f.do(request{method: "GET", target: "/api/v1/backends"})
	var list List
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || w.Code != http.StatusOK {
		t.Fatalf("list: %d %v", w.Code, err)
	}
	if b := list.Backends[1]; b.State != "maintenance" || b.InService || b.Maintenance == nil || b.Maintenance.By != "alice" {
		t.Errorf("listed %+v", b)
	}
	if list.Backends[0].Maintenance != nil || list.Readiness.CurrentHealthy != 2 {
		t.Errorf("listed %+v, readiness %+v", list.Backends[0], list.Readiness)
	}
	if list.Store.Kind != "file" || !list.Store.Healthy || !list.Store.LastSync.Equal(now) {
		t.Errorf("store status %+v, want a healthy file store synced at %v", list.Store, now)
	}

	w = f.do(request{method: "DELETE", target: "/api/v1/backends/b/maintenance"})
	var ended Ended
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &ended) != nil {
		t.Fatalf("DELETE: %d %s", w.Code, w.Body)
	}
	if want := (Ended{Backend: "b", WasInMaintenance: true, State: "unhealthy", Saved: true}); ended != want {
		t.Errorf("DELETE answered %+v, want %+v", ended, want)
	}
	if len(f.pool.Maintenances()) != 0 || len(f.fileEntries(t)) != 0 {
		t.Error("entry kept after DELETE")
	}
	w = f.do(request{method: "DELETE", target: "/api/v1/backends/b/maintenance"})
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"was_in_maintenance":false`) {
		t.Errorf("second DELETE: %d %s", w.Code, w.Body)
	}
}

// TestAPIListsAbsentEntries: an entry whose backend the pool does not have
// is listed apart, and kept.
func TestAPIListsAbsentEntries(t *testing.T) {
	dir := t.TempDir()
	gone := entries.Entry{Backend: "gone", Reason: "decommissioned", Since: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), By: "127.0.0.1"}
	seed, err := store.OpenFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seed.Swap(t.Context(), store.State{Token: 1}, store.Write{Entries: []entries.Entry{gone}}); err != nil {
		t.Fatal(err)
	}
	fs, err := store.OpenFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := newAPIFixtureOver(t, 1, APIOptions{Guard: admin.Guard{EnableAdminAPI: true}}, fs, dir)
	var list List
	if err := json.Unmarshal(f.do(request{method: "GET", target: "/api/v1/backends"}).Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Absent) != 1 || list.Absent[0].Backend != "gone" || list.Readiness.CurrentHealthy != 3 {
		t.Errorf("absent %+v, readiness %+v", list.Absent, list.Readiness)
	}
}

// TestAPIBadRequests: bad input gets 4xx saying what is wrong, and changes
// nothing. A ttl beyond maintenance.max_ttl (240y once overflowed into an
// entry that expired at once) and a body with trailing data are refused.
func TestAPIBadRequests(t *testing.T) {
	f := newAPIFixture(t, 3, APIOptions{Guard: admin.Guard{EnableAdminAPI: true}})
	for _, c := range []struct {
		target, body string
		code         int
		says         string
	}{
		{"/api/v1/backends/a/maintenance", `{}`, 400, "reason is required"},
		{"/api/v1/backends/a/maintenance", `{"reason":"   "}`, 400, "reason is required"},
		{"/api/v1/backends/a/maintenance", `{"reason":"` + strings.Repeat("x", 1025) + `"}`, 400, "longer than 1024 bytes"},
		{"/api/v1/backends/a/maintenance", `{"reason":"x","ttl":"soon"}`, 400, "soon"},
		{"/api/v1/backends/a/maintenance", `{"reason":"x","ttl":"-1h"}`, 400, "ttl"},
		{"/api/v1/backends/a/maintenance", `{"reason":"x","ttl":"0s"}`, 400, "positive duration"},
		{"/api/v1/backends/a/maintenance", `{"reason":"x","ttl":"240y"}`, 400, `longer than maintenance.max_ttl (1y)`},
		{"/api/v1/backends/a/maintenance", `{"reason":"x","ttl":"8761h"}`, 400, "maintenance.max_ttl"},
		{"/api/v1/backends/a/maintenance", `{"reason":"x","extra":1}`, 400, "extra"},
		{"/api/v1/backends/a/maintenance", `{"reason":"x"}{"x":1}`, 400, "nothing after it"},
		{"/api/v1/backends/a/maintenance", `{"reason":"x"} junk`, 400, "nothing after it"},
		{"/api/v1/backends/a/maintenance", `["x"]`, 400, "one JSON object"},
		{"/api/v1/backends/a/maintenance", `{"reason":"` + strings.Repeat("x", 70<<10) + `"}`, 400, "too large"},
		{"/api/v1/backends/a/maintenance?force=maybe", `{"reason":"x"}`, 400, "force"},
		{"/api/v1/backends/zz/maintenance", `{"reason":"x"}`, 404, "zz"},
	} {
		w := f.post(c.target, c.body)
		if w.Code != c.code || !strings.Contains(w.Body.String(), c.says) {
			t.Errorf("POST %s %.60s: %d %.300s, want %d saying %q", c.target, c.body, w.Code, w.Body, c.code, c.says)
		}
	}
	if w := f.do(request{method: "PUT", target: "/api/v1/backends/a/maintenance"}); w.Code != 405 || w.Header().Get("Allow") != "POST, DELETE" {
		t.Errorf("PUT: %d Allow %q", w.Code, w.Header().Get("Allow"))
	}
	if w := f.do(request{method: "POST", target: "/api/v1/backends"}); w.Code != 405 {
		t.Errorf("POST list: %d", w.Code)
	}
	if w := f.do(request{method: "DELETE", target: "/api/v1/backends/zz/maintenance"}); w.Code != 404 {
		t.Errorf("DELETE unknown: %d %s", w.Code, w.Body)
	}
	if len(f.pool.Maintenances()) != 0 || len(f.fileEntries(t)) != 0 {
		t.Error("a bad request changed something")
	}
	// The longest ttl allowed is granted, and ends when it says.
	w := f.post("/api/v1/backends/a/maintenance", `{"reason":"x","ttl":"8760h"}`)
	if m := f.pool.Maintenances(); w.Code != 200 || len(m) != 1 || !m[0].Until.Equal(f.clock.Now().Add(defaultMaxTTL)) {
		t.Errorf("ttl of max_ttl: %d %s", w.Code, w.Body)
	}
}

// TestAPIAuditFieldBy: `by` is the basic-auth user only when the web
// configuration authenticated it; otherwise the client's IP without its
// port, whatever user name the client typed.
func TestAPIAuditFieldBy(t *testing.T) {
	for _, c := range []struct {
		name          string
		authenticated bool
		remote, user  string
		want          string
	}{
		{"unauthenticated, typed user", false, "192.0.2.7:4242", "mallory", "192.0.2.7"},
		{"unauthenticated, no user", false, "192.0.2.7:4242", "", "192.0.2.7"},
		{"unauthenticated, IPv6", false, "[2001:db8::7]:4242", "mallory", "2001:db8::7"},
		{"unauthenticated, IPv4 in IPv6", false, "[::ffff:192.0.2.7]:4242", "", "192.0.2.7"},
		{"authenticated user", true, "192.0.2.7:4242", "alice", "alice"},
		{"authenticated, no user", true, "[::1]:4242", "", "::1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newAPIFixture(t, 1, APIOptions{Guard: admin.Guard{EnableAdminAPI: true}, Authenticated: c.authenticated})
			w := f.do(request{method: "POST", target: "/api/v1/backends/a/maintenance", body: `{"reason":"x"}`,
				remote: c.remote, user: c.user, password: "x"})
			var entered Entered
			if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &entered) != nil {
				t.Fatalf("POST: %d %s", w.Code, w.Body)
			}
			if entered.Maintenance.By != c.want {
				t.Errorf("by %q, want %q", entered.Maintenance.By, c.want)
			}
			if stored := f.fileEntries(t); len(stored) != 1 || stored[0].By != c.want {
				t.Errorf("stored %+v, want by %q", stored, c.want)
			}
		})
	}
}

// TestAPIStoreDownAnswers503: with the store unreachable, POST and DELETE
// answer 503 with Retry-After and a JSON error naming the store, nothing
// is granted or ended, the store shows unhealthy in the list, and reads
// still answer.
func TestAPIStoreDownAnswers503(t *testing.T) {
	entry := entries.Entry{Backend: "c", Reason: "disk", Since: time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC), By: "127.0.0.1"}
	ms := newMemStore("etcd", true, entry)
	f := newAPIFixtureOver(t, 2, APIOptions{Guard: admin.Guard{EnableAdminAPI: true}}, ms, "")
	ms.set(func(s *memStore) { s.down = errors.New("etcdserver: request timed out") })

	for _, r := range []request{
		{method: "POST", target: "/api/v1/backends/a/maintenance", body: `{"reason":"x"}`},
		{method: "DELETE", target: "/api/v1/backends/c/maintenance"},
	} {
		w := f.do(r)
		var e jsonanswer.Error
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "5" || json.Unmarshal(w.Body.Bytes(), &e) != nil {
			t.Fatalf("%s %s: %d Retry-After %q %s", r.method, r.target, w.Code, w.Header().Get("Retry-After"), w.Body)
		}
		if !strings.Contains(e.Error, "etcd maintenance store") || !strings.Contains(e.Error, "request timed out") {
			t.Errorf("%s: error %q does not name the store and its error", r.method, e.Error)
		}
	}
	if m := f.pool.Maintenances(); len(m) != 1 || m[0].Backend != "c" {
		t.Errorf("pool entries %+v, want c's alone", m)
	}
	if stored, _ := ms.stored(); len(stored) != 1 || stored[0].Backend != "c" {
		t.Errorf("store holds %+v, want c's alone", stored)
	}
	var list List
	w := f.do(request{method: "GET", target: "/api/v1/backends"})
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || w.Code != 200 {
		t.Fatalf("list: %d %v", w.Code, err)
	}
	if list.Store.Kind != "etcd" || list.Store.Healthy || !strings.Contains(list.Store.Error, "request timed out") || list.Backends[2].State != "maintenance" {
		t.Errorf("list while the store is down: store %+v, c %+v", list.Store, list.Backends[2])
	}
}

// TestAPIFailedFileSaveAnswers503: a file store whose save fails (its
// directory was replaced by a file) answers 503 naming the file store;
// the entry is not in force and the store health says so.
func TestAPIFailedFileSaveAnswers503(t *testing.T) {
	f := newAPIFixture(t, 1, APIOptions{Guard: admin.Guard{EnableAdminAPI: true}})
	if err := os.Remove(f.dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.dir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := f.post("/api/v1/backends/a/maintenance", `{"reason":"x"}`)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "file maintenance store") {
		t.Errorf("POST: %d Retry-After %q %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if len(f.pool.Maintenances()) != 0 || f.pool.Backends()[0].Served().State() != health.ServedHealthy {
		t.Error("an entry the store did not take is in force")
	}
	if f.manager.Status().Healthy || testutil.ToFloat64(f.manager.metrics.storeUp) != 0 ||
		testutil.ToFloat64(f.manager.metrics.operations.WithLabelValues(opSwap, resultError)) != 1 {
		t.Error("the failed save does not show in the store's health and metrics")
	}
}

// TestAPIReplicas: without replica views (an unshared store) the path
// answers 404 saying why; with them, the live views.
func TestAPIReplicas(t *testing.T) {
	f := newAPIFixture(t, 1, APIOptions{Guard: admin.Guard{EnableAdminAPI: true}})
	w := f.do(request{method: "GET", target: "/api/v1/replicas"})
	if w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "maintenance.store: etcd") {
		t.Errorf("without replicas: %d %s", w.Code, w.Body)
	}
	views := []ReplicaView{{Name: "r1", Ready: true, BudgetHolds: true, Expected: 3, InService: 3, DisruptionsAllowed: 1}}
	f = newAPIFixture(t, 1, APIOptions{Guard: admin.Guard{EnableAdminAPI: true}, Replicas: func() []ReplicaView { return views }})
	w = f.do(request{method: "GET", target: "/api/v1/replicas"})
	var got ReplicaList
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &got) != nil || len(got.Replicas) != 1 || got.Replicas[0] != views[0] {
		t.Errorf("with replicas: %d %s", w.Code, w.Body)
	}
}

// TestAPILoopbackOnly: restricted to loopback, the API refuses a client
// from another address and serves one on loopback.
func TestAPILoopbackOnly(t *testing.T) {
	f := newAPIFixture(t, 3, APIOptions{Guard: admin.Guard{EnableAdminAPI: true, LoopbackOnly: true}})
	if w := f.do(request{method: "GET", target: "/api/v1/backends", remote: "192.0.2.7:4242"}); w.Code != http.StatusForbidden {
		t.Errorf("remote client: %d", w.Code)
	}
	if w := f.do(request{method: "POST", target: "/api/v1/backends/a/maintenance", body: `{"reason":"x"}`, remote: "192.0.2.7:4242"}); w.Code != http.StatusForbidden {
		t.Errorf("remote POST: %d", w.Code)
	}
	for _, remote := range []string{"[::1]:4242", "127.0.0.1:4242"} {
		if w := f.do(request{method: "GET", target: "/api/v1/backends", remote: remote}); w.Code != http.StatusOK {
			t.Errorf("loopback client %s: %d %s", remote, w.Code, w.Body)
		}
	}
	if len(f.pool.Maintenances()) != 0 {
		t.Error("a remote client changed something")
	}
}

// TestAPIRefusesCrossOrigin: a browser's cross-site POST is refused.
func TestAPIRefusesCrossOrigin(t *testing.T) {
	f := newAPIFixture(t, 3, APIOptions{Guard: admin.Guard{EnableAdminAPI: true}})
	w := f.do(request{method: "POST", target: "/api/v1/backends/a/maintenance", body: `{"reason":"x"}`,
		header: []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}})
	if w.Code != http.StatusForbidden || len(f.pool.Maintenances()) != 0 || len(f.fileEntries(t)) != 0 {
		t.Errorf("cross-site POST: %d %s", w.Code, w.Body)
	}
}

// TestMaintenancePathIsServed: the path the CLI builds for a backend's
// maintenance is the one the API serves, for POST and DELETE alike.
func TestMaintenancePathIsServed(t *testing.T) {
	f := newAPIFixture(t, 1, APIOptions{Guard: admin.Guard{EnableAdminAPI: true}})
	if got, want := MaintenancePath("b"), "/api/v1/backends/b/maintenance"; got != want {
		t.Errorf("MaintenancePath(b) = %s, want %s", got, want)
	}
	if w := f.post(MaintenancePath("b"), `{"reason":"kernel"}`); w.Code != http.StatusOK {
		t.Errorf("POST %s: %d %s", MaintenancePath("b"), w.Code, w.Body)
	}
	if w := f.do(request{method: "DELETE", target: MaintenancePath("b")}); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"was_in_maintenance":true`) {
		t.Errorf("DELETE %s: %d %s", MaintenancePath("b"), w.Code, w.Body)
	}
}

// TestAPIListsVantagePoints: under shared probing GET /api/v1/backends
// gives a backend the fleet judges its verdict and vantage points, as
// /healthz does, one without a live verdict unknown and without since;
// a backend the fleet never judged has neither field.
func TestAPIListsVantagePoints(t *testing.T) {
	f := newAPIFixture(t, 1, APIOptions{Guard: admin.Guard{EnableAdminAPI: true}})
	since := time.Date(2026, 3, 4, 5, 0, 0, 0, time.FixedZone("CET", 3600))
	f.pool.ByName("b").SetFleet(pool.Fleet{Role: pool.RoleWatcher, Self: "r1", VantagePoints: []string{"r2", "r3"},
		Peers: []fleet.Vantage{{Replica: "r2", Verdict: fleet.Verdict{State: health.StateHealthy, Verified: true, Reachable: true, Since: since}}}}, f.clock.Now())
	w := f.do(request{method: "GET", target: "/api/v1/backends"})
	var list struct {
		Backends []map[string]json.RawMessage `json:"backends"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || w.Code != http.StatusOK || len(list.Backends) != 3 {
		t.Fatalf("list: %d %v %s", w.Code, err, w.Body)
	}
	for _, field := range []string{"verdict", "vantage_points"} {
		if _, ok := list.Backends[0][field]; ok {
			t.Errorf("backend a, never judged by the fleet, has %s: %s", field, w.Body)
		}
	}
	for field, want := range map[string]string{
		"verdict":        `"shared"`,
		"vantage_points": `[{"replica":"r2","state":"healthy","since":"2026-03-04T04:00:00Z"},{"replica":"r3","state":"unknown"}]`,
	} {
		if got := string(list.Backends[1][field]); got != want {
			t.Errorf("backend b's %s is %s, want %s", field, got, want)
		}
	}
}

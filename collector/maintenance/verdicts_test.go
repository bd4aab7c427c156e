package maintenance

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/probegate/probegate/collector/admin"
	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/maintenance/store"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// restartedReplica is the operator's pool as a replica sees it just after
// a restart: six probed backends under max_unavailable 2, b0 in
// maintenance (from the store), b1 dead but not yet judged (unknown),
// the other four healthy. Its budget allows no disruption: four are in
// service and four are desired.
func restartedReplica(t *testing.T, s store.Store) *apiFixture {
	t.Helper()
	names := backendNames(6)
	p := pool.New(nil, nil)
	settings := pool.Settings{Readiness: config.Readiness{MaxUnavailable: &config.IntOrPercent{Value: 2}}}
	if err := p.Apply(probedTargets(names), settings); err != nil {
		t.Fatal(err)
	}
	for _, b := range p.Backends()[2:] {
		b.RecordProbe(health.StatusResult(200))
	}
	m, _ := startManager(t, p, s, nil)
	mux := http.NewServeMux()
	api := NewAPI(m, APIOptions{Guard: admin.Guard{EnableAdminAPI: true}, MaxTTL: defaultMaxTTL}, nil)
	api.Register(mux)
	return &apiFixture{pool: p, manager: m, api: api, mux: mux}
}

// inMaintenanceB0 is the entry the store holds before the restart.
var inMaintenanceB0 = entries.Entry{Backend: "b00", Reason: "kernel", By: "ops"}

// notYetProbedAnswer is the 503 body as a client reads it.
type notYetProbedAnswer struct {
	Error    string `json:"error"`
	Awaiting struct {
		Backends  []string `json:"backends"`
		Unjudged  int      `json:"unjudged_backends"`
		Discovery []string `json:"discovery"`
	} `json:"awaiting"`
}

// TestAdmissionCountsVerdictsOnly: on a replica that has just restarted,
// a dead backend not yet judged is unknown, which routing serves; counted
// as available, it let an unforced request spend a disruption the budget
// does not have (current_healthy 3 of 4 desired once granted). A request
// is judged on verdicts only: until every backend not in maintenance has
// one it is 503 "not yet probed" naming the backend awaited, with
// Retry-After its probe interval, and nothing changes; once the dead
// backend is judged, it is the budget's 429. force overrides both. This
// holds for the file store and for a shared (etcd) store alike: both go
// through the one judgement.
func TestAdmissionCountsVerdictsOnly(t *testing.T) {
	for _, c := range []struct {
		name string
		open func(t *testing.T) store.Store
	}{
		{"file", func(t *testing.T) store.Store {
			fs, err := store.OpenFile(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			st, err := fs.Load(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fs.Swap(t.Context(), st, store.Write{Entries: []entries.Entry{inMaintenanceB0}}); err != nil {
				t.Fatal(err)
			}
			return fs
		}},
		{"etcd", func(*testing.T) store.Store { return newMemStore("etcd", true, inMaintenanceB0) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := restartedReplica(t, c.open(t))
			const target = "/api/v1/backends/b02/maintenance"
			w := f.post(target, `{"reason":"disk"}`)
			var got notYetProbedAnswer
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != http.StatusServiceUnavailable {
				t.Fatalf("with b01 unknown: %d %s, want 503 not yet probed", w.Code, w.Body)
			}
			if !strings.HasPrefix(got.Error, "not yet probed") || !strings.Contains(got.Error, "b01") || strings.Contains(got.Error, "b00") ||
				!slices.Equal(got.Awaiting.Backends, []string{"b01"}) || got.Awaiting.Unjudged != 1 || len(got.Awaiting.Discovery) != 0 {
				t.Errorf("503 body %+v: want not yet probed naming b01 alone (b00 is in maintenance either way)", got)
			}
			if ra := w.Header().Get("Retry-After"); ra != "5" {
				t.Errorf("Retry-After %q, want the probe interval, 5", ra)
			}
			if got := f.pool.Maintenances(); len(got) != 1 || got[0].Backend != "b00" {
				t.Errorf("a request not judged changed the entries: %+v", got)
			}

			// b01's probes judge it dead: now the budget can be counted,
			// and it allows nothing.
			for range 3 {
				f.pool.Backends()[1].RecordProbe(health.TransportError("dial", errors.New("connection refused")))
			}
			w = f.post(target, `{"reason":"disk"}`)
			var refused Refused
			if err := json.Unmarshal(w.Body.Bytes(), &refused); err != nil || w.Code != http.StatusTooManyRequests {
				t.Fatalf("with b01 judged dead: %d %s, want 429", w.Code, w.Body)
			}
			if want := (budget.Budget{Expected: 6, CurrentHealthy: 4, DesiredHealthy: 4}); refused.Budget != want {
				t.Errorf("429 budget %+v, want %+v", refused.Budget, want)
			}
			if b := f.pool.Budget(); !b.Holds() {
				t.Errorf("the pool's budget %+v does not hold after the refusals", b)
			}
		})
	}
}

// TestAdmissionForcedWhileNotYetProbed: force overrides "not yet probed"
// as it overrides the budget, and the grant says it was forced.
func TestAdmissionForcedWhileNotYetProbed(t *testing.T) {
	f := restartedReplica(t, newMemStore("etcd", true, inMaintenanceB0))
	w := f.post("/api/v1/backends/b02/maintenance?force=true", `{"reason":"disk"}`)
	var entered Entered
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &entered) != nil || !entered.Forced {
		t.Fatalf("forced while b01 is unknown: %d %s, want 200 forced", w.Code, w.Body)
	}
}

// TestAdmissionWaitsForDiscovery: while discovery has not delivered, the
// pool is partial and a request is 503 naming the source awaited, even
// when every backend it has is judged and the budget would allow it; once
// discovery has delivered, the request is granted.
func TestAdmissionWaitsForDiscovery(t *testing.T) {
	f := newAPIFixture(t, 1, APIOptions{Guard: admin.Guard{EnableAdminAPI: true}})
	f.pool.AwaitDiscovery([]string{"dns_sd_configs[0]"})
	w := f.post("/api/v1/backends/a/maintenance", `{"reason":"disk"}`)
	var got notYetProbedAnswer
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != http.StatusServiceUnavailable {
		t.Fatalf("discovery awaited: %d %s, want 503", w.Code, w.Body)
	}
	if !strings.Contains(got.Error, "service discovery has not delivered yet (dns_sd_configs[0])") ||
		!slices.Equal(got.Awaiting.Discovery, []string{"dns_sd_configs[0]"}) || got.Awaiting.Unjudged != 0 || got.Awaiting.Backends == nil {
		t.Errorf("503 body %+v: want the discovery source named, no backend", got)
	}
	if ra := w.Header().Get("Retry-After"); ra != "5" {
		t.Errorf("Retry-After %q, want 5", ra)
	}
	f.pool.AwaitDiscovery(nil)
	if w := f.post("/api/v1/backends/a/maintenance", `{"reason":"disk"}`); w.Code != http.StatusOK {
		t.Errorf("discovery delivered: %d %s, want 200", w.Code, w.Body)
	}
}

// TestAdmissionNamesAFewOfManyUnjudged: a pool of many backends without a
// verdict names ten and counts the rest, so that the answer stays small.
func TestAdmissionNamesAFewOfManyUnjudged(t *testing.T) {
	names := backendNames(40)
	p := pool.New(nil, nil)
	if err := p.Apply(probedTargets(names), pool.Settings{}); err != nil {
		t.Fatal(err)
	}
	m, _ := startManager(t, p, newMemStore("file", false), nil)
	_, err := m.enter(t.Context(), entries.Entry{Backend: names[0], Reason: "x"}, 0, false)
	var notYet *notYetProbedError
	if !errors.As(err, &notYet) {
		t.Fatalf("err %v, want not yet probed", err)
	}
	if a := notYet.Awaited; a.Unjudged != 40 || len(a.Backends) != 10 || !strings.Contains(err.Error(), "and 30 more") {
		t.Errorf("awaited %+v (%v): want 10 named of 40", a, err)
	}
}

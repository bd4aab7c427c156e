package maintenance

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/probegate/probegate/collector/admin"
	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/maintenance/store"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// groupedPool is a pool of groups × 2 healthy probed backends, g0-0,
// g0-1, g1-0, …, in groups g0, g1, …, under readiness.per_group
// max_unavailable 1 and a pool budget that allows every disruption.
func groupedPool(t *testing.T, groups int) *pool.Pool {
	t.Helper()
	var names []string
	for g := range groups {
		names = append(names, fmt.Sprintf("g%d-0", g), fmt.Sprintf("g%d-1", g))
	}
	targets := probedTargets(names)
	for i := range targets {
		targets[i].Group = fmt.Sprintf("g%d", i/2)
	}
	p := pool.New(nil, nil)
	s := pool.Settings{Readiness: config.Readiness{MinAvailable: &config.IntOrPercent{Value: 0},
		PerGroup: config.GroupBudget{MaxUnavailable: &config.IntOrPercent{Value: 1}}}}
	if err := p.Apply(targets, s); err != nil {
		t.Fatal(err)
	}
	for _, b := range p.Backends() {
		b.RecordProbe(health.StatusResult(200))
	}
	return p
}

// TestManagersSharingAStoreKeepEveryGroupBudget: requests for every
// backend of 4 groups × 2, all at once and spread over two replicas
// sharing one store, under per_group max_unavailable 1: exactly one
// replica of each group is granted, and each other request is refused by
// its group's budget, naming the group, though the pool's budget allows
// it. The compare-and-swap makes each replica judge the entries the other
// stored.
func TestManagersSharingAStoreKeepEveryGroupBudget(t *testing.T) {
	ms := newMemStore("etcd", true)
	m1, _ := startManager(t, groupedPool(t, 4), ms, nil)
	m2, _ := startManager(t, groupedPool(t, 4), ms, nil)
	names := []string{"g0-0", "g0-1", "g1-0", "g1-1", "g2-0", "g2-1", "g3-0", "g3-1"}
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		m := []*Manager{m1, m2}[i%2]
		wg.Go(func() {
			_, errs[i] = m.enter(t.Context(), entries.Entry{Backend: name, Reason: "kernel", By: "127.0.0.1"}, 0, false)
		})
	}
	wg.Wait()
	granted := map[string]string{}
	for i, err := range errs {
		group := names[i][:2]
		var ge *groupBudgetError
		switch {
		case err == nil:
			if other, twice := granted[group]; twice {
				t.Errorf("both %s and %s of group %s granted", other, names[i], group)
			}
			granted[group] = names[i]
		case errors.As(err, &ge):
			want := budget.Group{Name: group, Budget: budget.Budget{Expected: 2, CurrentHealthy: 1, DesiredHealthy: 1}, Budgeted: true}
			if ge.Group != want || !strings.Contains(err.Error(), fmt.Sprintf("replica group %q", group)) {
				t.Errorf("%s refused with %+v (%v), want %+v", names[i], ge.Group, err, want)
			}
		default:
			t.Errorf("%s: %v, want a grant or a groupBudgetError", names[i], err)
		}
	}
	if len(granted) != 4 {
		t.Errorf("granted %v, want one replica of each of the 4 groups", granted)
	}
	if stored, _ := ms.stored(); len(stored) != 4 {
		t.Errorf("store holds %+v, want 4 entries", stored)
	}
}

// TestAPIRefusesNamingTheGroup: a request the group's budget does not
// allow is answered 429 with the group's numbers and name beside the
// pool's; force overrides it; the list gives each backend's group.
func TestAPIRefusesNamingTheGroup(t *testing.T) {
	fs, err := store.OpenFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m, _ := startManager(t, groupedPool(t, 2), fs, nil)
	mux := http.NewServeMux()
	NewAPI(m, APIOptions{Guard: admin.Guard{EnableAdminAPI: true}, MaxTTL: defaultMaxTTL}, nil).Register(mux)
	f := &apiFixture{manager: m, mux: mux}
	if w := f.post("/api/v1/backends/g1-0/maintenance", `{"reason":"disk"}`); w.Code != http.StatusOK {
		t.Fatalf("first of g1: %d %s", w.Code, w.Body)
	}
	w := f.post("/api/v1/backends/g1-1/maintenance", `{"reason":"disk"}`)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
		t.Fatalf("second of g1: %d %s", w.Code, w.Body)
	}
	var got Refused
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := budget.Group{Name: "g1", Budget: budget.Budget{Expected: 2, CurrentHealthy: 1, DesiredHealthy: 1}, Budgeted: true}
	if got.Group == nil || *got.Group != want || !strings.Contains(got.Error, `the budget of replica group "g1" allows no disruption`) ||
		got.Budget.DisruptionsAllowed != 3 {
		t.Errorf("refusal %s, want group %+v and the pool's budget allowing 3", w.Body, want)
	}
	if !strings.Contains(w.Body.String(), `"group":{"name":"g1","expected":2,"current_healthy":1,"desired_healthy":1,"disruptions_allowed":0,"budgeted":true}`) {
		t.Errorf("answer %s does not name the group as documented", w.Body)
	}
	if w := f.post("/api/v1/backends/g1-1/maintenance?force=true", `{"reason":"disk"}`); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"forced":true`) {
		t.Errorf("forced: %d %s", w.Code, w.Body)
	}
	var list List
	if w := f.do(request{method: http.MethodGet, target: "/api/v1/backends"}); json.Unmarshal(w.Body.Bytes(), &list) != nil ||
		len(list.Backends) != 4 || list.Backends[0].Group != "g0" || list.Backends[3].Group != "g1" {
		t.Errorf("GET /api/v1/backends: %s; want each backend's group", w.Body)
	}
}

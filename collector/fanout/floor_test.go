package fanout

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/config"
)

// TestCraftedQueriesCannotFailReadiness reproduces the audit's finding: a
// client that knows which query fails on which backend sent 12 queries,
// each failing on one backend while its peers answered, and passive
// health (bounded only by max_ejected_percent) ejected one backend after
// another until the readiness budget failed. Passive ejection now shares
// outlier detection's floor: the pool never goes below desired_healthy,
// and each ejection it refuses is logged and counted once a window.
func TestCraftedQueriesCannotFailReadiness(t *testing.T) {
	minAvailable, err := config.ParseIntOrPercent("2")
	if err != nil {
		t.Fatal(err)
	}
	// Each backend fails the query that names it, as a query for data
	// only one replica holds can.
	failingFor := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("fail") == name {
				answer(http.StatusInternalServerError, `crafted`)(w, r)
				return
			}
			answer(http.StatusOK, `[1]`)(w, r)
		}
	}
	clock := newClock()
	rig := setup(t, options{
		passive:   config.PassiveHealth{Enabled: true, Window: model.Duration(30 * time.Second), MaxFailures: 4, MaxEjectedPercent: 100},
		readiness: config.Readiness{MinAvailable: &minAvailable},
		now:       clock.Now,
	}, serve(t, failingFor("b0")), serve(t, failingFor("b1")), serve(t, failingFor("b2")))
	for i := range 3 {
		rig.probe(t, i, 1)
	}
	if b := rig.pool.Budget(); !b.Holds() || b.CurrentHealthy != 3 {
		t.Fatalf("before the queries: %+v, want 3 in service", b)
	}

	for i := range 12 {
		rig.do("GET", fmt.Sprintf("/fanout/q?fail=b%d", i/4), "", nil)
		clock.Advance(100 * time.Millisecond)
		if b := rig.pool.Budget(); !b.Holds() {
			t.Fatalf("after %d crafted queries the readiness budget fails: %+v", i+1, b)
		}
	}
	b := rig.pool.Budget()
	if b.CurrentHealthy != 2 || b.DesiredHealthy != 2 {
		t.Errorf("after 12 crafted queries %+v; want b0 ejected and the other two kept at the floor of 2", b)
	}
	if !rig.backend(0).Health().Ejected || rig.backend(1).Health().Ejected || rig.backend(2).Health().Ejected {
		t.Error("want b0 ejected, b1 and b2 in service")
	}
	if got := rig.pool.Snapshot().PassiveSuppressed; got != 2 {
		t.Errorf("%d suppressed ejections counted, want 2 (b1 and b2, once each in the window)", got)
	}
	for _, name := range []string{"b1", "b2"} {
		if n := rig.logs.count(`msg="Passive health did not eject the backend: the readiness budget allows no disruption"`, "backend="+name, "in_service=2", "desired_healthy=2"); n != 1 {
			t.Errorf("the suppression of %s logged %d times, want once:\n%s", name, n, rig.logs)
		}
	}
}

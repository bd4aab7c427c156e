package status

import (
	"strings"
	"testing"
	"time"

	"github.com/probegate/probegate/collector/fleet"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
)

// TestPageShowsSharedProbing: under shared probing the header says the
// replica's mode, the summary names the replica disagreeing alone with
// its peers, and each backend the fleet judges shows its verdict and its
// vantage points with their states and since when, a dissenting one
// marked and one without a live verdict unknown; a backend the fleet
// never judged shows none, nor does a page without shared probing.
func TestPageShowsSharedProbing(t *testing.T) {
	now := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	p := testPool(t, func() time.Time { return now }, "http://127.0.0.1:19001", "http://127.0.0.1:19002", "http://127.0.0.1:19003")
	if body := get(t, Handler(Options{Pool: p, Started: now}), "/status").Body.String(); strings.Contains(body, `data-field="probing"`) ||
		strings.Contains(body, `data-field="vantage-points"`) || strings.Contains(body, `data-field="dissenters"`) {
		t.Errorf("a page without shared probing shows it:\n%s", body)
	}

	p.SetProbing(pool.ProbingShared)
	since := now.Add(-3 * time.Minute)
	verdict := func(replica string, state health.State) fleet.Vantage {
		return fleet.Vantage{Replica: replica, Verdict: fleet.Verdict{State: state, Verified: true, Reachable: true, Since: since}}
	}
	b := pool.Fleet{Role: pool.RoleWatcher, Self: "r1", VantagePoints: []string{"r2", "r3", "r4"},
		Peers: []fleet.Vantage{verdict("r2", health.StateHealthy), verdict("r3", health.StateHealthy), verdict("r4", health.StateUnhealthy)}}
	p.ByName("b").SetFleet(b, now.Add(-time.Minute))
	p.ByName("b").SetFleet(b, now)
	p.ByName("c").SetFleet(pool.Fleet{Role: pool.RoleWatcher, Self: "r1", VantagePoints: []string{"r2", "r5"},
		Peers: []fleet.Vantage{verdict("r2", health.StateHealthy)}}, now)

	body := get(t, Handler(Options{Pool: p, Started: now}), "/status").Body.String()
	for _, want := range []string{
		`probing <span data-field="probing" data-mode="shared" class="badge ok"`,
		`<span data-dissenter="r4" data-backends="1" data-named="1"><strong>r4</strong> disagrees alone on 1 backend now, named 1 time</span>`,
		`<span class="vantage" data-field="vantage-points" data-verdict="shared"><span class="muted">shared verdict</span>` +
			` <span class="vp state-healthy" data-vantage-point="r2" data-state="healthy" data-dissenting="false" title="2024-03-01T11:57:00Z">r2 healthy for 3m0s</span>` +
			` <span class="vp state-healthy" data-vantage-point="r3" data-state="healthy" data-dissenting="false" title="2024-03-01T11:57:00Z">r3 healthy for 3m0s</span>` +
			` <span class="vp state-unhealthy" data-vantage-point="r4" data-state="unhealthy" data-dissenting="true" title="2024-03-01T11:57:00Z">r4 unhealthy for 3m0s <strong>dissents</strong></span></span>`,
		` <span class="vp state-unknown" data-vantage-point="r5" data-state="unknown" data-dissenting="false">r5 unknown</span></span>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	row := body[strings.Index(body, `<tr data-backend="a"`):]
	if row = row[:strings.Index(row, "</tr>")]; strings.Contains(row, "vantage") {
		t.Errorf("backend a, never judged by the fleet, shows vantage points: %s", row)
	}

	p.SetProbing(pool.ProbingLocal)
	body = get(t, Handler(Options{Pool: p, Started: now}), "/status").Body.String()
	if !strings.Contains(body, `probing <span data-field="probing" data-mode="local" class="badge warn"`) {
		t.Error("the page does not say the replica probes locally")
	}
}

package exporter

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/probegate/probegate/collector/fleet"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
)

// sharedEpoch is when the vantage points of sharedProbingPool's backends
// entered their states.
var sharedEpoch = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// sharedProbingPool is a pool under shared probing as replica r1 sees
// it, r1 probing none of its backends:
//   - a: shared probing never judged it;
//   - b: vantage points r2, r3, r4, of which r4 alone has said unhealthy
//     for longer than fleet.DissentIntervals probe intervals;
//   - c: vantage points r2 and r5, r5 without a live verdict;
//   - d: vantage points r2, r3, r5, of which r5 dissented long enough to
//     be named, then agreed again.
//
// So r4 and r5 were each named once, and r4 alone dissents now.
func sharedProbingPool(t testing.TB) *pool.Pool {
	t.Helper()
	cfg := testConfig(namedBackends("a", "b", "c", "d")...)
	p := leanPool(t, cfg)
	p.SetProbing(pool.ProbingShared)
	verdict := func(replica string, state health.State) fleet.Vantage {
		return fleet.Vantage{Replica: replica, Verdict: fleet.Verdict{State: state, Verified: true, Reachable: true, Since: sharedEpoch}}
	}
	watch := func(vantagePoints []string, peers ...fleet.Vantage) pool.Fleet {
		return pool.Fleet{Role: pool.RoleWatcher, Self: "r1", VantagePoints: vantagePoints, Peers: peers}
	}
	named := sharedEpoch.Add((fleet.DissentIntervals + 1) * time.Duration(cfg.HealthProbe.Interval))

	b := watch([]string{"r2", "r3", "r4"},
		verdict("r2", health.StateHealthy), verdict("r3", health.StateHealthy), verdict("r4", health.StateUnhealthy))
	p.ByName("b").SetFleet(b, sharedEpoch)
	p.ByName("b").SetFleet(b, named)

	p.ByName("c").SetFleet(watch([]string{"r2", "r5"}, verdict("r2", health.StateHealthy)), sharedEpoch)

	d := []string{"r2", "r3", "r5"}
	dissenting := watch(d, verdict("r2", health.StateHealthy), verdict("r3", health.StateHealthy), verdict("r5", health.StateUnhealthy))
	p.ByName("d").SetFleet(dissenting, sharedEpoch)
	p.ByName("d").SetFleet(dissenting, named)
	p.ByName("d").SetFleet(watch(d, verdict("r2", health.StateHealthy), verdict("r3", health.StateHealthy), verdict("r5", health.StateHealthy)), named)
	return p
}

// TestHealthzSharedProbing: under shared probing /healthz says so, lists
// the replicas named lone dissenters with the backends they dissent on
// now and the times they were named, and gives each backend the fleet
// judges its verdict and vantage points, highest ranked first: a live one
// with its state and since, one without a live verdict unknown and
// without since, a dissenting one marked. A backend the fleet never
// judged has neither field.
func TestHealthzSharedProbing(t *testing.T) {
	doc := getHealthz(t, HealthzHandler(sharedProbingPool(t), nil))
	jsonKeys(t, "document", doc, "backends", "pool", "readiness", "groups", "last_fanout", "probing", "dissenters")
	if doc["probing"] != "shared" {
		t.Errorf("probing = %#v, want shared", doc["probing"])
	}
	dissenters, ok := doc["dissenters"].([]any)
	if !ok || len(dissenters) != 2 {
		t.Fatalf("dissenters = %#v, want r4 and r5", doc["dissenters"])
	}
	for i, want := range []map[string]any{
		{"replica": "r4", "backends": 1.0, "disagreements": 1.0},
		{"replica": "r5", "backends": 0.0, "disagreements": 1.0},
	} {
		checkFields(t, "dissenters[]", jsonKeys(t, "dissenters[]", dissenters[i], "replica", "backends", "disagreements"), want)
	}

	backends := doc["backends"].([]any)
	jsonKeys(t, "backends[a]", backends[0], backendKeys...)
	since := "2024-03-01T12:00:00.000Z"
	for i, want := range []struct {
		name          string
		vantagePoints []map[string]any
	}{
		{"b", []map[string]any{
			{"replica": "r2", "state": "healthy", "since": since},
			{"replica": "r3", "state": "healthy", "since": since},
			{"replica": "r4", "state": "unhealthy", "since": since, "dissenting": true},
		}},
		{"c", []map[string]any{
			{"replica": "r2", "state": "healthy", "since": since},
			{"replica": "r5", "state": "unknown"},
		}},
		{"d", []map[string]any{
			{"replica": "r2", "state": "healthy", "since": since},
			{"replica": "r3", "state": "healthy", "since": since},
			{"replica": "r5", "state": "healthy", "since": since},
		}},
	} {
		b := jsonKeys(t, "backends["+want.name+"]", backends[i+1], append([]string{"verdict", "vantage_points"}, backendKeys...)...)
		checkFields(t, "backends["+want.name+"]", b, map[string]any{"name": want.name, "verdict": "shared"})
		got, ok := b["vantage_points"].([]any)
		if !ok || len(got) != len(want.vantagePoints) {
			t.Errorf("backends[%s].vantage_points = %#v, want %d", want.name, b["vantage_points"], len(want.vantagePoints))
			continue
		}
		for j, vp := range want.vantagePoints {
			var keys []string
			for k := range vp {
				keys = append(keys, k)
			}
			checkFields(t, "backends["+want.name+"].vantage_points[]", jsonKeys(t, "backends["+want.name+"].vantage_points[]", got[j], keys...), vp)
		}
	}
}

// TestHealthzLocalVerdictAndNoDissenters: a backend this replica judges
// by its own probes under shared probing is "local", with its vantage
// points; in local mode with no dissenter the list of dissenters is
// empty, not absent.
func TestHealthzLocalVerdictAndNoDissenters(t *testing.T) {
	snap := pool.Snapshot{Probing: pool.ProbingLocal, Backends: []pool.BackendSnapshot{{Name: "a",
		Fleet: &pool.FleetSnapshot{VantagePoints: []pool.VantagePointSnapshot{{Replica: "r2"}}}}}}
	body, err := json.Marshal(newHealthzReport(snap, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"probing":"local"`, `"dissenters":[]`, `"verdict":"local","vantage_points":[{"replica":"r2","state":"unknown"}]`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/healthz lacks %s:\n%s", want, body)
		}
	}
}

// TestVantageSeries: under shared probing each replica named a lone
// dissenter has the times it was named and the backends it dissents on
// now, the latter 0 once it agrees again; the two families have no
// backend label, so they cost nothing per backend.
func TestVantageSeries(t *testing.T) {
	p := sharedProbingPool(t)
	e := newExporter(p)
	got := exportedText(t, e, "probegate_vantage_disagreements_total", "probegate_vantage_dissents")
	compareExposition(t, got, `
# TYPE probegate_vantage_disagreements_total counter
probegate_vantage_disagreements_total{replica="r4"} 1
probegate_vantage_disagreements_total{replica="r5"} 1
# TYPE probegate_vantage_dissents gauge
probegate_vantage_dissents{replica="r4"} 1
probegate_vantage_dissents{replica="r5"} 0
`)
	snap := p.Snapshot()
	shared := countExposed(e.build(snap).sorted())
	snap.Probing = ""
	if added := shared - countExposed(e.build(snap).sorted()); added != 2*2 {
		t.Errorf("shared probing adds %d series to a pool of 4 backends and 2 dissenters, want 2 a dissenter and none a backend", added)
	}
}

package exporter

import (
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/probegate/probegate/collector/discovery"
	"github.com/probegate/probegate/collector/fanout"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/internal/testclock"
)

// TestHealthzSinceDowntimeAndRoundBackends: since is the last state change
// in the /healthz time format, downtime_seconds counts the current stretch
// out of service, and last_fanout names every backend's outcome.
func TestHealthzSinceDowntimeAndRoundBackends(t *testing.T) {
	clock := testclock.New(time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC))
	cfg := sampleConfig("a", "b")
	p := pool.New(log.NewNopLogger(), clock.Now)
	if err := p.Apply(discovery.Static(cfg), pool.SettingsOf(cfg)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		p.Backends()[0].RecordProbe(health.StatusResult(503))
	}
	clock.Advance(90 * time.Second)
	round := &fanout.RoundSummary{Time: clock.Now(), Contributed: 1, Configured: 2, Partial: true, Backends: []fanout.RoundBackend{
		{Name: "b", Outcome: fanout.OutcomeContributed, Status: 200},
		{Name: "a", Outcome: fanout.OutcomeSkipped, Reason: fanout.MissingMaintenance},
	}}
	doc := getHealthz(t, HealthzHandler(p, func() *fanout.RoundSummary { return round }))
	backends := doc["backends"].([]any)
	checkFields(t, "backends[0]", backends[0].(map[string]any), map[string]any{
		"since": "2024-03-01T12:00:00.000Z", "downtime_seconds": 90.0,
	})
	checkFields(t, "backends[1]", backends[1].(map[string]any), map[string]any{
		"since": nil, "downtime_seconds": 0.0,
	})
	last := doc["last_fanout"].(map[string]any)
	rbs, ok := last["backends"].([]any)
	if !ok || len(rbs) != 2 {
		t.Fatalf("last_fanout.backends = %#v, want 2 entries", last["backends"])
	}
	checkFields(t, "last_fanout.backends[0]", jsonKeys(t, "last_fanout.backends[0]", rbs[0], "name", "outcome", "reason", "status"),
		map[string]any{"name": "b", "outcome": "contributed", "reason": "", "status": 200.0})
	checkFields(t, "last_fanout.backends[1]", rbs[1].(map[string]any),
		map[string]any{"name": "a", "outcome": "skipped", "reason": "maintenance", "status": 0.0})
}

// TestLastTransitionMetric: the timestamp of the last state change is
// exported per backend, and absent until the first change.
func TestLastTransitionMetric(t *testing.T) {
	clock := testclock.New(time.Unix(1700000100, 0))
	cfg := sampleConfig("a", "b")
	p := pool.New(log.NewNopLogger(), clock.Now)
	if err := p.Apply(discovery.Static(cfg), pool.SettingsOf(cfg)); err != nil {
		t.Fatal(err)
	}
	p.Backends()[0].RecordProbe(health.StatusResult(200))
	got := exportedText(t, newExporter(p), "probegate_backend_last_transition_timestamp_seconds")
	want := `probegate_backend_last_transition_timestamp_seconds{backend="a"} 1.7000001e+09`
	if !strings.Contains(got, want) || strings.Contains(got, `backend="b"`) {
		t.Errorf("last transition series:\n%s\nwant %s and no series for b", got, want)
	}
}

package pool

import (
	"reflect"
	"testing"
	"time"

	"github.com/probegate/probegate/collector/health"
)

// TestFleetSnapshotViews: a backend shared probing never judged has no
// verdict and no vantage points; one the fleet judges is shared or local
// with its vantage points in rank order, one without a live verdict
// unknown and without since, as is a live one that did not say since
// when.
func TestFleetSnapshotViews(t *testing.T) {
	var never *FleetSnapshot
	format := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	if v, views := never.Verdict(), never.Views(format); v != "" || views != nil {
		t.Errorf("never judged: verdict %q, vantage points %v, want neither", v, views)
	}
	since := time.Date(2024, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	f := &FleetSnapshot{Shared: true, VantagePoints: []VantagePointSnapshot{
		{Replica: "r3", Live: true, State: health.StateUnhealthy, Since: since, Dissenting: true},
		{Replica: "r1", Live: true, State: health.StateHealthy},
		{Replica: "r2", State: health.StateHealthy, Since: since},
	}}
	want := []VantagePointView{
		{Replica: "r3", State: "unhealthy", Since: "2024-03-01T11:00:00Z", Dissenting: true},
		{Replica: "r1", State: "healthy"},
		{Replica: "r2", State: "unknown"},
	}
	if got := f.Views(format); !reflect.DeepEqual(got, want) {
		t.Errorf("vantage points %+v, want %+v", got, want)
	}
	if v := f.Verdict(); v != VerdictShared {
		t.Errorf("verdict %q, want %q", v, VerdictShared)
	}
	if v := (&FleetSnapshot{}).Verdict(); v != VerdictLocal {
		t.Errorf("verdict %q, want %q", v, VerdictLocal)
	}
	if views := (&FleetSnapshot{}).Views(format); views == nil || len(views) != 0 {
		t.Errorf("no vantage point: %#v, want an empty list", views)
	}
}

// TestSnapshotDissenters: with shared probing off there are none; with it
// on, every replica ever named, by name, with the times it was named and
// the backends it dissents on now, 0 once it agrees again, and a replica
// dissenting now though not counted here is listed too.
func TestSnapshotDissenters(t *testing.T) {
	// dissenting is a fleet's word on a backend whose vantage points
	// are replicas, dissenter among them dissenting.
	dissenting := func(dissenter string, replicas ...string) *FleetSnapshot {
		f := &FleetSnapshot{Shared: true}
		for _, r := range replicas {
			f.VantagePoints = append(f.VantagePoints, VantagePointSnapshot{Replica: r, Live: true, Dissenting: r == dissenter})
		}
		return f
	}
	s := Snapshot{Dissents: map[string]uint64{"r4": 3, "r5": 2}, Backends: []BackendSnapshot{
		{Name: "a"},
		{Name: "b", Fleet: dissenting("r4", "r2", "r3", "r4")},
		{Name: "c", Fleet: dissenting("r4", "r2", "r4")},
		{Name: "d", Fleet: dissenting("r0", "r2", "r0", "r5")},
	}}
	if got := s.Dissenters(); got != nil {
		t.Errorf("shared probing off: dissenters %+v, want none", got)
	}
	s.Probing = ProbingShared
	want := []Dissenter{{Replica: "r0", Backends: 1}, {Replica: "r4", Named: 3, Backends: 2}, {Replica: "r5", Named: 2}}
	if got := s.Dissenters(); !reflect.DeepEqual(got, want) {
		t.Errorf("dissenters %+v, want %+v", got, want)
	}
	s.Dissents, s.Backends = nil, nil
	if got := s.Dissenters(); got == nil || len(got) != 0 {
		t.Errorf("no dissent: %#v, want an empty list", got)
	}
}

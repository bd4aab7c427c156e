package pool

import (
	"testing"
	"time"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
)

// TestSnapshotOfFindsOneBackend: SnapshotOf copies the named backend and
// no other, tells a name no backend has, follows a reload that renames
// the backends, and ends a maintenance entry whose time ran out before it
// copies, as every reader does.
func TestSnapshotOfFindsOneBackend(t *testing.T) {
	p, clock := healthyPool(t, 3, 1)
	feed(p.Backends()[2], downResult, 3)
	for _, want := range []struct {
		name  string
		state health.ServedState
	}{{"b0", health.ServedHealthy}, {"b2", health.ServedUnhealthy}} {
		got, ok := p.SnapshotOf(want.name)
		if !ok || got.Name != want.name || got.Served.State() != want.state {
			t.Errorf("SnapshotOf(%q) = %q %v %v, want %q %v true", want.name, got.Name, got.Served.State(), ok, want.name, want.state)
		}
	}
	for _, unknown := range []string{"b3", "", "B0", "b0 "} {
		if _, ok := p.SnapshotOf(unknown); ok {
			t.Errorf("SnapshotOf(%q) found a backend", unknown)
		}
	}

	enter(p, entries.Entry{Backend: "b1", Until: clock.Now().Add(time.Minute)})
	if got, _ := p.SnapshotOf("b1"); got.Served.State() != health.ServedMaintenance {
		t.Fatalf("b1 is %v during its entry, want maintenance", got.Served.State())
	}
	clock.Advance(time.Minute)
	if got, _ := p.SnapshotOf("b1"); got.Served.State() == health.ServedMaintenance {
		t.Error("b1 still in maintenance once its entry ran out")
	}

	targets := numberedTargets(2)
	targets[1].Name = "renamed"
	if err := p.Apply(targets, allowingDisruptions(2, 1)); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.SnapshotOf("b1"); ok {
		t.Error("b1 found after a reload removed it")
	}
	if got, ok := p.SnapshotOf("renamed"); !ok || got.Name != "renamed" {
		t.Errorf("SnapshotOf(renamed) = %q %v after the reload", got.Name, ok)
	}
}

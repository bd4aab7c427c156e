package pool

import (
	"testing"
	"time"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/history"
	"github.com/probegate/probegate/internal/testclock"
)

// outlierEjectedB0 is a pool of three unprobed backends under enforcing
// outlier detection in which b0 was ejected for its latency, its clock,
// and when b0 was ejected.
func outlierEjectedB0(t *testing.T) (*Pool, *Backend, *testclock.Clock, time.Time) {
	t.Helper()
	p, clock, _ := detectingPool(t, 3, true, nil, false)
	rounds(p, clock, 5, nil, map[int]time.Duration{0: 150 * time.Millisecond})
	b0 := p.Backends()[0]
	snap := b0.Snapshot()
	if snap.Served.State() != health.ServedEjected || snap.DownSince.IsZero() {
		t.Fatalf("b0 at 150ms among 1ms: %s, down since %v; want ejected and out of service", snap.Served.State(), snap.DownSince)
	}
	return p, b0, clock, snap.DownSince
}

// newestTransition is the pool's last logged state change.
func newestTransition(t *testing.T, p *Pool) history.Transition {
	t.Helper()
	log := p.SnapshotWithTransitions().Transitions
	if len(log) == 0 {
		t.Fatal("no transition logged")
	}
	return log[0]
}

// TestMaintenanceEndsUnderOutlierEjection: a backend that leaves
// maintenance while an outlier ejection still holds it out is served as
// ejected, and the transition it records says so: it is counted towards
// ejected, not its machine's state, and its stretch out of service goes
// on from the ejection.
func TestMaintenanceEndsUnderOutlierEjection(t *testing.T) {
	p, b0, _, down := outlierEjectedB0(t)
	enter(p, entries.Entry{Backend: "b0", Reason: "kernel update"})
	p.SetMaintenance(nil, entries.KeptByClock)
	snap := b0.Snapshot()
	if got := snap.Served.State(); got != health.ServedEjected {
		t.Fatalf("after maintenance: served %s; want ejected", got)
	}
	if got := newestTransition(t, p); got.From != health.ServedMaintenance || got.To != health.ServedEjected {
		t.Errorf("logged %s → %s; want maintenance → ejected", got.From, got.To)
	}
	if got := snap.Transitions; got[health.ServedUnknown] != 0 || got[health.ServedEjected] != 2 || got[health.ServedMaintenance] != 1 {
		t.Errorf("transitions %v; want ejected twice, maintenance once, unknown never", got)
	}
	if !snap.DownSince.Equal(down) {
		t.Errorf("down since %v; want %v, the ejection: it never came back", snap.DownSince, down)
	}
}

// TestOutlierReadmittedDuringMaintenance: an outlier ejection that ends
// while the backend is in maintenance changes nothing it is served as, so
// it records no transition; leaving maintenance then does.
func TestOutlierReadmittedDuringMaintenance(t *testing.T) {
	p, b0, clock, _ := outlierEjectedB0(t)
	enter(p, entries.Entry{Backend: "b0", Reason: "kernel update"})
	before := newestTransition(t, p)
	clock.Advance(time.Minute)
	p.Selection()
	snap := b0.Snapshot()
	if snap.Outlier.Ejected || snap.Served.State() != health.ServedMaintenance {
		t.Fatalf("after the ejection's time: ejected %v, served %s; want readmitted, in maintenance", snap.Outlier.Ejected, snap.Served.State())
	}
	if got := newestTransition(t, p); got != before {
		t.Errorf("logged %s → %s; want nothing since ejected → maintenance", got.From, got.To)
	}
	if got := snap.Transitions[health.ServedMaintenance]; got != 1 {
		t.Errorf("%d transitions to maintenance; want 1, one entry", got)
	}
	p.SetMaintenance(nil, entries.KeptByClock)
	snap = b0.Snapshot()
	if got := newestTransition(t, p); got.From != health.ServedMaintenance || got.To != health.ServedUnknown {
		t.Errorf("leaving maintenance logged %s → %s; want maintenance → unknown", got.From, got.To)
	}
	if !snap.DownSince.IsZero() {
		t.Errorf("back in service but down since %v", snap.DownSince)
	}
}

// TestPassiveEjectionUnderOutlierEjection: passive health may eject and
// readmit a backend that an outlier ejection holds out (the fan-out asks
// it when the pool fails open), but what it is served as stays ejected,
// so neither records a transition.
func TestPassiveEjectionUnderOutlierEjection(t *testing.T) {
	p, b0, clock, down := outlierEjectedB0(t)
	before := newestTransition(t, p)
	now := clock.Now()
	if _, _, ejected := b0.ejectPassively(now, time.Second); !ejected {
		t.Fatal("passive health did not eject the outlier-ejected backend")
	}
	if readmitted, _, _ := b0.readmitElapsed(now.Add(time.Second), time.Second); !readmitted {
		t.Fatal("the elapsed window did not readmit the unprobed backend")
	}
	snap := b0.Snapshot()
	if got := newestTransition(t, p); got != before {
		t.Errorf("logged %s → %s; want nothing: b0 was ejected throughout", got.From, got.To)
	}
	if got := snap.Transitions; got[health.ServedUnhealthy] != 0 || got[health.ServedUnknown] != 0 || got[health.ServedEjected] != 1 {
		t.Errorf("transitions %v; want ejected once and nothing else", got)
	}
	if !snap.DownSince.Equal(down) {
		t.Errorf("down since %v; want %v, the outlier ejection", snap.DownSince, down)
	}
}

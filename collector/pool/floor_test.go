package pool

import (
	"testing"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/outlier"
	"github.com/probegate/probegate/config"
)

// maxUnavailable is readiness.max_unavailable: n.
func maxUnavailable(n int) config.Readiness {
	return config.Readiness{MaxUnavailable: &config.IntOrPercent{Value: n}}
}

// withVerdicts gives the first n backends of p a healthy verdict; the
// others stay unknown, as a dead backend is on a replica that has just
// started until its probes fail.
func withVerdicts(p *Pool, n int) {
	for _, b := range p.Backends()[:n] {
		feed(b, okResult, 1)
	}
}

// TestPassiveFloorCountsVerdictsOnly: a replica that has just started
// has four backends under max_unavailable 1, b3 dead but still unknown.
// Passive health does not eject b2: with b3 counted as available the
// pool would be left with two backends in service against three desired
// once b3's probes fail. It does eject b3 for its own failing traffic,
// which leaves the three with a verdict. A pool whose backends are not
// probed counts them as configured, and ejects.
func TestPassiveFloorCountsVerdictsOnly(t *testing.T) {
	s := passiveSettings()
	s.Readiness = maxUnavailable(1)
	p, _ := newClockedPool(t, nil, numberedTargets(4), s)
	withVerdicts(p, 3)
	failTraffic(p, p.Backends()[2], 3)
	if got := p.Backends()[2].Health(); got.Ejected {
		t.Errorf("b2 ejected while b3 awaits its first verdict: %+v", got)
	}
	if got := p.Snapshot().PassiveSuppressed; got != 1 {
		t.Errorf("%d suppressed passive ejections, want 1", got)
	}

	// b3 fails its traffic too: ejecting it leaves the three backends
	// with a verdict in service, which the budget allows.
	failTraffic(p, p.Backends()[3], 3)
	if got := p.Backends()[3].Health(); !got.Ejected {
		t.Errorf("b3, unknown and failing its traffic, not ejected although its ejection leaves the budget holding: %+v", got)
	}

	// With every verdict in, the disruption is free.
	judged, _ := newClockedPool(t, nil, numberedTargets(4), s)
	withVerdicts(judged, 4)
	failTraffic(judged, judged.Backends()[2], 3)
	if got := judged.Backends()[2].Health(); !got.Ejected {
		t.Errorf("b2 not ejected with every verdict in: %+v", got)
	}

	unprobedPool, _ := newClockedPool(t, nil, unprobedTargets(4), s)
	failTraffic(unprobedPool, unprobedPool.Backends()[2], 3)
	if got := unprobedPool.Backends()[2].Health(); !got.Ejected {
		t.Errorf("backends that are not probed count as configured, yet b2 was not ejected: %+v", got)
	}
}

// TestOutlierFloorCountsVerdictsOnly: outlier detection holds the same
// floor: with b3 unknown it does not eject b2, and once b3 has its
// verdict it does.
func TestOutlierFloorCountsVerdictsOnly(t *testing.T) {
	p, clock, _ := detectingPool(t, 4, true, nil, true)
	if err := p.Apply(numberedTargets(4), Settings{Outlier: p.settings.Outlier, Readiness: maxUnavailable(1)}); err != nil {
		t.Fatal(err)
	}
	withVerdicts(p, 3)
	rounds(p, clock, 5, map[int]bool{2: true}, nil)
	if got := p.Backends()[2].Served().State(); got == health.ServedEjected {
		t.Fatalf("b2 ejected while b3 awaits its first verdict")
	}
	if got := p.Snapshot().Suppressed[outlier.ReasonFailure]; got != 1 {
		t.Errorf("%d suppressed outlier ejections, want 1", got)
	}
	feed(p.Backends()[3], okResult, 1)
	rounds(p, clock, 1, map[int]bool{2: true}, nil)
	if got := p.Backends()[2].Served().State(); got != health.ServedEjected {
		t.Errorf("b2 is %s with every verdict in, want ejected", got)
	}
}

// TestGroupFloorsCountVerdictsOnly: the budget of a replica group is
// counted alike by both ejectors and by maintenance admission: with b2
// of s1 unknown, neither a maintenance request for b0 nor b1's passive
// nor b0's outlier ejection may spend s1's one disruption.
func TestGroupFloorsCountVerdictsOnly(t *testing.T) {
	perGroup := config.Readiness{PerGroup: maxUnavailableOne}

	s := passiveSettings()
	s.Passive.MaxEjectedPercent = 100
	s.Readiness = perGroup
	p, _ := newClockedPool(t, nil, groupedTargets("s1", "s1", "s1", "s2"), s)
	withVerdicts(p, 2)
	feed(p.Backends()[3], okResult, 1)
	a, release, err := p.AdmitMaintenance([]entries.Entry{}, "b0")
	if err != nil {
		t.Fatal(err)
	}
	release()
	if a.Group.CurrentHealthy != 2 || a.Group.AllowsDisruption() {
		t.Errorf("admission of b0: group %+v, want 2 of s1 in service and no disruption allowed", a.Group)
	}

	failTraffic(p, p.Backends()[1], 3)
	if got := p.Backends()[1].Health(); got.Ejected {
		t.Errorf("passive health ejected b1 while b2 of its group awaits its verdict: %+v", got)
	}

	o, clock, _ := detectingPool(t, 4, true, nil, true)
	if err := o.Apply(groupedTargets("s1", "s1", "s1", "s2"), Settings{Outlier: o.settings.Outlier, Readiness: perGroup}); err != nil {
		t.Fatal(err)
	}
	withVerdicts(o, 2)
	feed(o.Backends()[3], okResult, 1)
	rounds(o, clock, 5, map[int]bool{0: true}, nil)
	if got := o.Backends()[0].Served().State(); got == health.ServedEjected {
		t.Errorf("outlier detection ejected b0 while b2 of its group awaits its verdict")
	}
}

package pool

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/config"
)

// TestAdmittedMaintenanceHoldsTheOutlierFloor: a maintenance request
// admitted on the last disruption holds its backend out of outlier
// detection's count until it is released, so a failing backend is not
// ejected meanwhile; once released without an entry, the disruption is
// free again and the outlier is ejected.
func TestAdmittedMaintenanceHoldsTheOutlierFloor(t *testing.T) {
	p, clock, _ := detectingPool(t, 3, true, &config.IntOrPercent{Value: 2}, false)
	a, release, err := p.AdmitMaintenance(nil, "b0")
	if err != nil || !a.InService || a.Budget.DisruptionsAllowed != 1 {
		t.Fatalf("AdmitMaintenance = %+v, %v; want b0 in service and one disruption allowed", a, err)
	}
	outlier := p.Backends()[1]
	rounds(p, clock, 5, map[int]bool{1: true}, nil)
	if got := outlier.Served().State(); got == health.ServedEjected {
		t.Fatalf("b1 ejected while b0's admitted request held the last disruption")
	}
	release()
	release() // a second call changes nothing
	rounds(p, clock, 5, map[int]bool{1: true}, nil)
	if got := outlier.Served().State(); got != health.ServedEjected {
		t.Errorf("b1 is %s after the request was released, want ejected", got)
	}
	if _, _, err := p.AdmitMaintenance(nil, "nobody"); !errors.Is(err, ErrUnknownBackend) {
		t.Errorf("AdmitMaintenance of an unknown backend: %v, want ErrUnknownBackend", err)
	}
}

// TestAdmissionCountsVerdictsOnly: the budget a maintenance request is
// judged by counts a probed backend still unknown as unavailable, and
// names it as awaited, while routing and /ready's budget still count it
// in service; a backend in maintenance is not awaited (it is out either
// way), a backend that is not probed counts as configured, and the
// discovery sources awaited are named.
func TestAdmissionCountsVerdictsOnly(t *testing.T) {
	targets := numberedTargets(5)
	targets[4].Probe.Enabled = false
	p := newPool(t, targets, allowingDisruptions(5, 1))
	feed(p.Backends()[2], okResult, 1)
	feed(p.Backends()[3], okResult, 1)
	// b0 is in maintenance and unknown, b1 unknown, b4 not probed.
	a, release, err := p.AdmitMaintenance([]entries.Entry{{Backend: "b0"}}, "b2")
	if err != nil {
		t.Fatal(err)
	}
	release()
	if want := (budget.Budget{Expected: 5, CurrentHealthy: 3, DesiredHealthy: 4}); a.Budget != want || !a.InService {
		t.Errorf("admission %+v, want budget %+v and b2 in service", a, want)
	}
	if a.Awaited.None() || a.Awaited.Unjudged != 1 || !slices.Equal(a.Awaited.Backends, []string{"b1"}) ||
		a.Awaited.Interval != time.Duration(defaultProbe.Interval) {
		t.Errorf("awaited %+v, want b1 alone, with its probe interval", a.Awaited)
	}
	if b, _, _ := p.BudgetWith([]entries.Entry{{Backend: "b0"}}, "b2"); b.CurrentHealthy != 4 {
		t.Errorf("BudgetWith %+v: the budget /ready shows counts b1 in service", b)
	}
	// An unknown backend asked for is awaited too, and in service by routing.
	if a, release, _ := p.AdmitMaintenance(nil, "b1"); !a.InService || a.Awaited.Unjudged != 2 {
		t.Errorf("admission of b1: %+v, want it in service and b0, b1 awaited", a)
	} else {
		release()
	}

	p.AwaitDiscovery([]string{"file_sd_configs[0]"})
	feed(p.Backends()[0], okResult, 1)
	feed(p.Backends()[1], okResult, 1)
	a, release, _ = p.AdmitMaintenance(nil, "b2")
	release()
	if !slices.Equal(a.Awaited.Discovery, []string{"file_sd_configs[0]"}) || a.Awaited.Unjudged != 0 || a.Awaited.None() {
		t.Errorf("awaited %+v, want the discovery source alone", a.Awaited)
	}
	if got := p.Awaited(); !slices.Equal(got.Discovery, a.Awaited.Discovery) || got.Unjudged != 0 {
		t.Errorf("Awaited %+v, want what the admission saw", got)
	}
	p.AwaitDiscovery(nil)
	if a, release, _ = p.AdmitMaintenance(nil, "b2"); !a.Awaited.None() || a.Budget.DisruptionsAllowed != 1 {
		t.Errorf("every verdict in and discovery delivered: %+v, want nothing awaited and one disruption", a)
	}
	release()
}

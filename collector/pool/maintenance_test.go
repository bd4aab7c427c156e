package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/testclock"
)

var (
	okResult   = health.StatusResult(200)
	downResult = health.StatusResult(503)
)

// maintenanceTestSettings allow exactly `allowed` disruptions of a fully
// healthy pool of n backends.
func maintenanceTestSettings(n, allowed int) Settings {
	return Settings{Readiness: config.Readiness{MinAvailable: &config.IntOrPercent{Value: n - allowed}}}
}

// healthyPool is a clocked pool of n probed backends, every one healthy,
// whose budget allows `allowed` disruptions.
func healthyPool(t *testing.T, n, allowed int) (*Pool, *testclock.Clock) {
	t.Helper()
	p, clock := newClockedPool(t, nil, poolTestTargets(n), maintenanceTestSettings(n, allowed))
	for _, b := range p.Backends() {
		feed(b, okResult, 1)
	}
	return p, clock
}

func stateOf(p *Pool, name string) health.State {
	for _, b := range p.Snapshot().Backends {
		if b.Name == name {
			return b.Health.State
		}
	}
	return health.NumStates
}

// TestMaintenanceOverlay: a backend in maintenance shows the state
// maintenance, is out of service and not counted as current_healthy,
// while its probes go on and are counted without moving the state.
func TestMaintenanceOverlay(t *testing.T) {
	p, _ := healthyPool(t, 3, 1)
	if _, _, err := p.EnterMaintenance(Maintenance{Backend: "b1", Reason: "kernel update"}, false); err != nil {
		t.Fatal(err)
	}
	b := p.Backends()[1]
	if got := b.Health(); got.State != health.StateMaintenance || got.InService() {
		t.Fatalf("health %+v, want maintenance and out of service", got)
	}
	if got := p.Budget(); got.CurrentHealthy != 2 || got.DisruptionsAllowed != 0 {
		t.Errorf("budget %+v, want current_healthy 2 and no disruption left", got)
	}
	if got := selectedNames(p); got != "[b0 b2]" {
		t.Errorf("selected %s, want [b0 b2]", got)
	}
	feed(b, downResult, 3)
	snap := b.Snapshot()
	if snap.Health.State != health.StateMaintenance || snap.Probes != 4 || snap.Failures[health.ReasonHTTP5xx] != 3 {
		t.Errorf("after 3 failing probes: state %v, probes %d, 5xx %d; want maintenance, 4, 3",
			snap.Health.State, snap.Probes, snap.Failures[health.ReasonHTTP5xx])
	}
	if snap.Transitions[health.StateUnhealthy] != 0 || snap.Transitions[health.StateMaintenance] != 1 {
		t.Errorf("transitions %v: a change under maintenance must not count, entering it once", snap.Transitions)
	}
	if snap.Maintenance == nil || snap.Maintenance.Reason != "kernel update" {
		t.Errorf("snapshot maintenance %+v", snap.Maintenance)
	}
}

// TestMaintenanceRefusedByBudgetChangesNothing: with no disruption
// allowed, entering is refused with the budget's numbers and nothing
// changes; force overrides.
func TestMaintenanceRefusedByBudgetChangesNothing(t *testing.T) {
	p, _ := healthyPool(t, 2, 0)
	var saves int
	p.OnMaintenanceChange(func([]Maintenance) error { saves++; return nil })
	_, forced, err := p.EnterMaintenance(Maintenance{Backend: "b0"}, false)
	var be *BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("err %v, want a BudgetError", err)
	}
	if want := (Budget{Expected: 2, CurrentHealthy: 2, DesiredHealthy: 2}); be.Budget != want || forced {
		t.Errorf("budget %+v forced %v, want %+v unforced", be.Budget, forced, want)
	}
	if got := stateOf(p, "b0"); got != health.StateHealthy {
		t.Errorf("state %v after a refusal, want healthy", got)
	}
	if len(p.Maintenances()) != 0 || saves != 0 {
		t.Errorf("entries %v, saves %d after a refusal", p.Maintenances(), saves)
	}

	after, forced, err := p.EnterMaintenance(Maintenance{Backend: "b0"}, true)
	if err != nil || !forced {
		t.Fatalf("forced entry: forced %v err %v", forced, err)
	}
	if got := stateOf(p, "b0"); got != health.StateMaintenance || after.CurrentHealthy != 1 || saves != 1 {
		t.Errorf("forced: state %v, budget %+v, saves %d", got, after, saves)
	}
}

// TestMaintenanceOfOutOfServiceBackendIgnoresBudget: a backend already out
// of service takes nothing from the budget.
func TestMaintenanceOfOutOfServiceBackendIgnoresBudget(t *testing.T) {
	p, _ := healthyPool(t, 2, 0)
	feed(p.Backends()[1], downResult, 3)
	if _, _, err := p.EnterMaintenance(Maintenance{Backend: "b1"}, false); err != nil {
		t.Fatalf("unhealthy backend refused: %v", err)
	}
	if _, _, err := p.EnterMaintenance(Maintenance{Backend: "nope"}, false); !errors.Is(err, ErrUnknownBackend) {
		t.Errorf("unknown backend: err %v", err)
	}
}

// TestMaintenanceConcurrentEntriesShareTheBudget: of eight concurrent
// requests for different backends, a budget that allows one lets exactly
// one through.
func TestMaintenanceConcurrentEntriesShareTheBudget(t *testing.T) {
	p, _ := healthyPool(t, 8, 1)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, _, errs[i] = p.EnterMaintenance(Maintenance{Backend: fmt.Sprintf("b%d", i)}, false) })
	}
	wg.Wait()
	passed := 0
	for _, err := range errs {
		if err == nil {
			passed++
		}
	}
	if passed != 1 || len(p.Maintenances()) != 1 {
		t.Errorf("%d entered, %d entries; want exactly 1", passed, len(p.Maintenances()))
	}
}

// TestMaintenanceExitReadmitsAfterSuccesses: leaving maintenance, a probed
// backend is unhealthy until `successes` consecutive ok probes; ok,
// failure, ok does not readmit it.
func TestMaintenanceExitReadmitsAfterSuccesses(t *testing.T) {
	p, _ := healthyPool(t, 2, 1)
	if _, _, err := p.EnterMaintenance(Maintenance{Backend: "b0"}, false); err != nil {
		t.Fatal(err)
	}
	b := p.Backends()[0]
	feed(b, okResult, 5)
	if existed, err := p.ExitMaintenance("b0"); !existed || err != nil {
		t.Fatalf("exit: existed %v err %v", existed, err)
	}
	if got := b.Health().State; got != health.StateUnhealthy {
		t.Fatalf("state %v right after maintenance, want unhealthy", got)
	}
	feed(b, okResult, 1)
	feed(b, downResult, 1)
	feed(b, okResult, 1)
	if got := b.Health().State; got != health.StateUnhealthy {
		t.Fatalf("state %v after ok, failure, ok; want unhealthy", got)
	}
	feed(b, okResult, 1)
	if got := b.Health().State; got != health.StateHealthy {
		t.Errorf("state %v after 2 consecutive ok probes, want healthy", got)
	}
}

// TestMaintenanceExitUnprobedIsImmediate: with probing off the backend
// returns to its probe-derived state at once.
func TestMaintenanceExitUnprobedIsImmediate(t *testing.T) {
	p, _ := newClockedPool(t, nil, unprobedTargets(2), maintenanceTestSettings(2, 1))
	if _, _, err := p.EnterMaintenance(Maintenance{Backend: "b1"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ExitMaintenance("b1"); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(p, "b1"); got != health.StateUnknown {
		t.Errorf("state %v, want unknown, its probe-derived state", got)
	}
}

// TestMaintenanceTTLExpires: the ttl ends the maintenance at exactly its
// Until, noticed by a read; the saved entries follow.
func TestMaintenanceTTLExpires(t *testing.T) {
	p, clock := healthyPool(t, 2, 1)
	var saved [][]Maintenance
	p.OnMaintenanceChange(func(e []Maintenance) error { saved = append(saved, e); return nil })
	until := clock.Now().Add(time.Hour)
	if _, _, err := p.EnterMaintenance(Maintenance{Backend: "b0", Until: until}, false); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour - time.Nanosecond)
	if got := stateOf(p, "b0"); got != health.StateMaintenance {
		t.Fatalf("state %v before the ttl ran out", got)
	}
	clock.Advance(time.Nanosecond)
	if got := stateOf(p, "b0"); got != health.StateUnhealthy {
		t.Errorf("state %v when the ttl ran out, want unhealthy", got)
	}
	if len(p.Maintenances()) != 0 {
		t.Errorf("entries %v after expiry", p.Maintenances())
	}
	if len(saved) != 1 || len(saved[0]) != 1 {
		t.Errorf("saves %v, want the one entry", saved)
	}
	// A read does no I/O; saving the expiry is RunMaintenance's.
	if err := p.saveMaintenance(); err != nil || len(saved) != 2 || len(saved[1]) != 0 {
		t.Errorf("after expiry, saves %v err %v, want an empty save", saved, err)
	}
}

// TestRunMaintenanceExpiresAndSaves: without any read, RunMaintenance ends
// the maintenance when its ttl runs out and saves the entries.
func TestRunMaintenanceExpiresAndSaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(nil, nil)
		if err := p.Apply(poolTestTargets(2), maintenanceTestSettings(2, 1)); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var last []Maintenance
		p.OnMaintenanceChange(func(e []Maintenance) error { mu.Lock(); defer mu.Unlock(); last = e; return nil })
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { p.RunMaintenance(ctx) })
		defer wg.Wait()
		defer cancel()

		if _, _, err := p.EnterMaintenance(Maintenance{Backend: "b0", Until: time.Now().Add(time.Minute)}, false); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute - time.Nanosecond)
		synctest.Wait()
		mu.Lock()
		if len(last) != 1 {
			t.Errorf("saved %v before the ttl ran out", last)
		}
		mu.Unlock()
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(last) != 0 {
			t.Errorf("saved %v after the ttl ran out, want no entry", last)
		}
	})
}

// TestMaintenanceFailOpenExcludesIt: fail-open selects every backend but
// the ones in maintenance.
func TestMaintenanceFailOpenExcludesIt(t *testing.T) {
	p, _ := healthyPool(t, 3, 3)
	if _, _, err := p.EnterMaintenance(Maintenance{Backend: "b1"}, false); err != nil {
		t.Fatal(err)
	}
	feed(p.Backends()[0], downResult, 3)
	feed(p.Backends()[2], downResult, 3)
	selected, configured, failOpen := p.Select()
	if !failOpen || configured != 3 || fmt.Sprint(names(selected)) != "[b0 b2]" {
		t.Errorf("selected %v of %d, fail-open %v; want [b0 b2] of 3 failing open", names(selected), configured, failOpen)
	}
}

// TestMaintenanceSurvivesReload: a reload keeps the maintenance; a backend
// removed by it keeps its entry and is in maintenance again on return.
func TestMaintenanceSurvivesReload(t *testing.T) {
	p, _ := healthyPool(t, 3, 1)
	if _, _, err := p.EnterMaintenance(Maintenance{Backend: "b2", Reason: "r"}, false); err != nil {
		t.Fatal(err)
	}
	targets := poolTestTargets(3)
	if err := p.Apply(targets[:2], maintenanceTestSettings(2, 1)); err != nil {
		t.Fatal(err)
	}
	if got := p.Maintenances(); len(got) != 1 || got[0].Backend != "b2" {
		t.Fatalf("entries %v after removing b2", got)
	}
	targets[2].URL = "http://127.0.0.1:19999" // returns changed: a new object
	if err := p.Apply(targets, maintenanceTestSettings(3, 1)); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(p, "b2"); got != health.StateMaintenance {
		t.Errorf("returning backend in state %v, want maintenance", got)
	}
}

// TestRestoreMaintenanceDropsExpired: restored entries apply to their
// backends; expired ones are dropped.
func TestRestoreMaintenanceDropsExpired(t *testing.T) {
	p, clock := healthyPool(t, 3, 1)
	p.RestoreMaintenance([]Maintenance{
		{Backend: "b0", Until: clock.Now().Add(-time.Second)},
		{Backend: "b1", Until: clock.Now().Add(time.Hour)},
		{Backend: "gone"},
	})
	if got := fmt.Sprint(stateOf(p, "b0"), stateOf(p, "b1"), len(p.Maintenances())); got != "healthy maintenance 2" {
		t.Errorf("got %s, want b0 healthy, b1 in maintenance, 2 entries", got)
	}
}

// TestPassiveHealthSkipsMaintenance: traffic that reached a backend before
// it entered maintenance does not eject it.
func TestPassiveHealthSkipsMaintenance(t *testing.T) {
	s := ejectionTestSettings()
	s.Readiness = maintenanceTestSettings(2, 1).Readiness
	p, _ := newClockedPool(t, nil, poolTestTargets(2), s)
	if _, _, err := p.EnterMaintenance(Maintenance{Backend: "b0"}, false); err != nil {
		t.Fatal(err)
	}
	failTraffic(p, p.Backends()[0], 5)
	if h := p.Backends()[0].Health(); h.Ejected {
		t.Error("a backend in maintenance was ejected")
	}
}

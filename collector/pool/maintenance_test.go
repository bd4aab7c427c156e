package pool

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/testclock"
)

var (
	okResult   = health.StatusResult(200)
	downResult = health.StatusResult(503)
)

// allowingDisruptions allow exactly `allowed` disruptions of a fully
// healthy pool of n backends.
func allowingDisruptions(n, allowed int) Settings {
	return Settings{Readiness: config.Readiness{MinAvailable: &config.IntOrPercent{Value: n - allowed}}}
}

// healthyPool is a clocked pool of n probed backends, every one healthy,
// whose budget allows `allowed` disruptions.
func healthyPool(t *testing.T, n, allowed int) (*Pool, *testclock.Clock) {
	t.Helper()
	p, clock := newClockedPool(t, nil, numberedTargets(n), allowingDisruptions(n, allowed))
	for _, b := range p.Backends() {
		feed(b, okResult, 1)
	}
	return p, clock
}

func stateOf(p *Pool, name string) health.ServedState {
	for _, b := range p.Snapshot().Backends {
		if b.Name == name {
			return b.Served.State()
		}
	}
	return health.NumServedStates
}

// enter puts the named backends in maintenance, as the store's entries.
func enter(p *Pool, in ...entries.Entry) {
	p.SetMaintenance(append(p.Maintenances(), in...), entries.KeptByClock)
}

// TestMaintenanceOverlay: a backend in maintenance shows the state
// maintenance, is out of service and not counted as current_healthy,
// while its probes go on and are counted without moving the state.
func TestMaintenanceOverlay(t *testing.T) {
	p, _ := healthyPool(t, 3, 1)
	enter(p, entries.Entry{Backend: "b1", Reason: "kernel update"})
	b := p.Backends()[1]
	if got := b.Served(); got.State() != health.ServedMaintenance || got.InService() {
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
	if snap.Served.State() != health.ServedMaintenance || snap.Probes != 4 || snap.Failures[health.ReasonHTTP5xx] != 3 {
		t.Errorf("after 3 failing probes: state %v, probes %d, 5xx %d; want maintenance, 4, 3",
			snap.Served.State(), snap.Probes, snap.Failures[health.ReasonHTTP5xx])
	}
	if snap.Transitions[health.ServedUnhealthy] != 0 || snap.Transitions[health.ServedMaintenance] != 1 {
		t.Errorf("transitions %v: a change under maintenance must not count, entering it once", snap.Transitions)
	}
	if snap.Maintenance == nil || snap.Maintenance.Reason != "kernel update" {
		t.Errorf("snapshot maintenance %+v", snap.Maintenance)
	}
}

// TestBudgetWithCountsEveryEntry: the budget a new entry is judged against
// counts the given entries, whatever the pool has applied, and says
// whether the backend asked for is in service by them.
func TestBudgetWithCountsEveryEntry(t *testing.T) {
	p, _ := healthyPool(t, 3, 1)
	b, inService, err := p.BudgetWith(nil, "b0")
	if want := (budget.Budget{Expected: 3, CurrentHealthy: 3, DesiredHealthy: 2, DisruptionsAllowed: 1}); err != nil || b != want || !inService {
		t.Fatalf("no entries: %+v %v %v, want %+v in service", b, inService, err, want)
	}
	b, inService, _ = p.BudgetWith([]entries.Entry{{Backend: "b1"}}, "b0")
	if b.CurrentHealthy != 2 || b.DisruptionsAllowed != 0 || !inService {
		t.Errorf("b1 stored in maintenance: %+v in service %v; want 2 healthy, none allowed", b, inService)
	}
	if _, inService, _ = p.BudgetWith([]entries.Entry{{Backend: "b0"}}, "b0"); inService {
		t.Error("a backend the entries hold is in service")
	}
	feed(p.Backends()[2], downResult, 3)
	if b, _, _ = p.BudgetWith(nil, "b2"); b.CurrentHealthy != 2 {
		t.Errorf("an unhealthy backend counted as healthy: %+v", b)
	}
	if _, _, err := p.BudgetWith(nil, "nope"); !errors.Is(err, ErrUnknownBackend) {
		t.Errorf("unknown backend: err %v", err)
	}
	if len(p.Maintenances()) != 0 {
		t.Error("BudgetWith changed the entries")
	}
}

// TestMaintenanceExitReadmitsAfterSuccesses: leaving maintenance, a probed
// backend is unhealthy until `successes` consecutive ok probes; ok,
// failure, ok does not readmit it.
func TestMaintenanceExitReadmitsAfterSuccesses(t *testing.T) {
	p, _ := healthyPool(t, 2, 1)
	enter(p, entries.Entry{Backend: "b0"})
	b := p.Backends()[0]
	feed(b, okResult, 5)
	p.SetMaintenance(nil, entries.KeptByClock)
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
	p, _ := newClockedPool(t, nil, unprobedTargets(2), allowingDisruptions(2, 1))
	enter(p, entries.Entry{Backend: "b1"})
	p.SetMaintenance(nil, entries.KeptByClock)
	if got := stateOf(p, "b1"); got != health.ServedUnknown {
		t.Errorf("state %v, want unknown, its probe-derived state", got)
	}
}

// TestMaintenanceTTLExpires: the ttl ends the maintenance at exactly its
// Until, noticed by a read.
func TestMaintenanceTTLExpires(t *testing.T) {
	p, clock := healthyPool(t, 2, 1)
	enter(p, entries.Entry{Backend: "b0", Until: clock.Now().Add(time.Hour)})
	clock.Advance(time.Hour - time.Nanosecond)
	if got := stateOf(p, "b0"); got != health.ServedMaintenance {
		t.Fatalf("state %v before the ttl ran out", got)
	}
	clock.Advance(time.Nanosecond)
	if got := stateOf(p, "b0"); got != health.ServedUnhealthy {
		t.Errorf("state %v when the ttl ran out, want unhealthy", got)
	}
	if len(p.Maintenances()) != 0 {
		t.Errorf("entries %v after expiry", p.Maintenances())
	}
}

// TestRunExpiresMaintenance: without any read, Run ends the maintenance
// when its ttl runs out.
func TestRunExpiresMaintenance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(nil, nil)
		if err := p.Apply(numberedTargets(2), allowingDisruptions(2, 1)); err != nil {
			t.Fatal(err)
		}
		startRun(t, p)

		enter(p, entries.Entry{Backend: "b0", Until: time.Now().Add(time.Minute)})
		b := p.Backends()[0]
		time.Sleep(time.Minute - time.Nanosecond)
		synctest.Wait()
		if got := b.Snapshot().Served.State(); got != health.ServedMaintenance {
			t.Errorf("state %v before the ttl ran out", got)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if got := b.Snapshot().Served.State(); got == health.ServedMaintenance {
			t.Error("still in maintenance after the ttl ran out")
		}
	})
}

// TestRunLeavesStoreKeptMaintenance: entries whose ttls a shared store
// measures are never ended by the pool's clock, however far it runs past
// their Until: the store ends them, through SetMaintenance.
func TestRunLeavesStoreKeptMaintenance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(nil, nil)
		if err := p.Apply(numberedTargets(2), allowingDisruptions(2, 1)); err != nil {
			t.Fatal(err)
		}
		startRun(t, p)
		p.SetMaintenance([]entries.Entry{{Backend: "b0", Until: time.Now().Add(-time.Minute)}}, entries.KeptByStore)
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := stateOf(p, "b0"); got != health.ServedMaintenance {
			t.Errorf("state %v an hour past its until, want maintenance until the store ends it", got)
		}
		p.SetMaintenance(nil, entries.KeptByStore)
		if got := stateOf(p, "b0"); got == health.ServedMaintenance {
			t.Error("still in maintenance after the store ended it")
		}
	})
}

// TestMaintenanceFarUntilIsNotDue: an Until past what a Unix nanosecond
// count holds (a ttl of centuries, year 9999 in a stored entry) is never
// due, rather than overflowing into the past and spinning the expiry loop.
func TestMaintenanceFarUntilIsNotDue(t *testing.T) {
	far := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	synctest.Test(t, func(t *testing.T) {
		p := New(nil, nil)
		if err := p.Apply(numberedTargets(1), allowingDisruptions(1, 1)); err != nil {
			t.Fatal(err)
		}
		enter(p, entries.Entry{Backend: "b0", Until: far})
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		wakeups := 0
		timer := time.NewTimer(0)
		for {
			if p.wait(ctx, timer) {
				break
			}
			if wakeups++; wakeups > 3 {
				t.Fatalf("Run woke %d times within an hour for an entry due in year 9999", wakeups)
			}
		}
		if got := stateOf(p, "b0"); got != health.ServedMaintenance {
			t.Errorf("state %v, want maintenance", got)
		}
	})
}

// TestMaintenanceFailOpenExcludesIt: fail-open selects every backend but
// the ones in maintenance.
func TestMaintenanceFailOpenExcludesIt(t *testing.T) {
	p, _ := healthyPool(t, 3, 3)
	enter(p, entries.Entry{Backend: "b1"})
	feed(p.Backends()[0], downResult, 3)
	feed(p.Backends()[2], downResult, 3)
	selected, _, configured, failOpen := p.Selection()
	if !failOpen || configured != 3 || fmt.Sprint(names(selected)) != "[b0 b2]" {
		t.Errorf("selected %v of %d, fail-open %v; want [b0 b2] of 3 failing open", names(selected), configured, failOpen)
	}
}

// TestMaintenanceSurvivesReload: a reload keeps the maintenance; a backend
// removed by it keeps its entry and is in maintenance again on return.
func TestMaintenanceSurvivesReload(t *testing.T) {
	p, _ := healthyPool(t, 3, 1)
	enter(p, entries.Entry{Backend: "b2", Reason: "r"})
	targets := numberedTargets(3)
	if err := p.Apply(targets[:2], allowingDisruptions(2, 1)); err != nil {
		t.Fatal(err)
	}
	if got := p.Maintenances(); len(got) != 1 || got[0].Backend != "b2" {
		t.Fatalf("entries %v after removing b2", got)
	}
	targets[2].URL = "http://127.0.0.1:19999" // returns changed: a new object
	if err := p.Apply(targets, allowingDisruptions(3, 1)); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(p, "b2"); got != health.ServedMaintenance {
		t.Errorf("returning backend in state %v, want maintenance", got)
	}
}

// TestSetMaintenanceReplacesAndDropsExpired: the entries given replace the
// pool's; expired ones are dropped, entries of absent backends kept.
func TestSetMaintenanceReplacesAndDropsExpired(t *testing.T) {
	p, clock := healthyPool(t, 3, 1)
	enter(p, entries.Entry{Backend: "b2"})
	p.SetMaintenance([]entries.Entry{
		{Backend: "b0", Until: clock.Now().Add(-time.Second)},
		{Backend: "b1", Until: clock.Now().Add(time.Hour)},
		{Backend: "gone"},
	}, entries.KeptByClock)
	if got := fmt.Sprint(stateOf(p, "b0"), stateOf(p, "b1"), stateOf(p, "b2"), len(p.Maintenances())); got != "healthy maintenance unhealthy 2" {
		t.Errorf("got %s, want b0 healthy, b1 in maintenance, b2 readmitting, 2 entries", got)
	}
}

// TestPassiveHealthSkipsMaintenance: traffic that reached a backend before
// it entered maintenance does not eject it.
func TestPassiveHealthSkipsMaintenance(t *testing.T) {
	s := passiveSettings()
	s.Readiness = allowingDisruptions(2, 1).Readiness
	p, _ := newClockedPool(t, nil, numberedTargets(2), s)
	enter(p, entries.Entry{Backend: "b0"})
	failTraffic(p, p.Backends()[0], 5)
	if h := p.Backends()[0].Health(); h.Ejected {
		t.Error("a backend in maintenance was ejected")
	}
}

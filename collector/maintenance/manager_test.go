package maintenance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/maintenance/store"
	"github.com/probegate/probegate/internal/testclock"
)

func backendNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("b%02d", i)
	}
	return names
}

// counter reads one series of reg, 0 when it is absent.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			m := f.GetMetric()[0]
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// TestManagersSharingAStoreGrantOneDisruption: 24 concurrent requests
// for distinct backends, spread over two replicas' managers that share one
// store, under a budget that allows one disruption: exactly one is
// granted, the others are refused by the budget once they see its entry,
// and every lost compare-and-swap is counted as a conflict.
func TestManagersSharingAStoreGrantOneDisruption(t *testing.T) {
	const n = 24
	names := backendNames(n)
	ms := newMemStore("etcd", true)
	m1, reg1 := startManager(t, healthyPool(t, names, 1, nil), ms, nil)
	m2, reg2 := startManager(t, healthyPool(t, names, 1, nil), ms, nil)

	// Every request reaches the store with the same revision before any
	// swap is judged, so that all of them race for it.
	var arrived atomic.Int32
	race := make(chan struct{})
	ms.set(func(s *memStore) {
		s.beforeSwap = func() {
			if arrived.Add(1) == n {
				close(race)
			}
			select {
			case <-race:
			case <-time.After(10 * time.Second): // a guard: the counts below then fail
			}
		}
	})

	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		m := []*Manager{m1, m2}[i%2]
		wg.Go(func() {
			_, errs[i] = m.enter(t.Context(), entries.Entry{Backend: names[i], Reason: "kernel", By: "127.0.0.1"}, 0, false)
		})
	}
	wg.Wait()

	granted := ""
	for i, err := range errs {
		var be *budgetError
		switch {
		case err == nil:
			if granted != "" {
				t.Errorf("both %s and %s granted", granted, names[i])
			}
			granted = names[i]
		case errors.As(err, &be):
			if be.Budget.DisruptionsAllowed != 0 || be.Budget.CurrentHealthy != n-1 {
				t.Errorf("%s refused with budget %+v, want %d healthy and none allowed", names[i], be.Budget, n-1)
			}
		default:
			t.Errorf("%s: %v, want a grant or a budgetError", names[i], err)
		}
	}
	if granted == "" {
		t.Fatal("nothing granted")
	}
	if stored, _ := ms.stored(); len(stored) != 1 || stored[0].Backend != granted {
		t.Errorf("store holds %+v, want %s's entry alone", stored, granted)
	}
	for i, m := range []*Manager{m1, m2} {
		if got := m.pool.Maintenances(); len(got) != 1 || got[0].Backend != granted {
			t.Errorf("replica %d applies %+v, want %s's entry alone", i+1, got, granted)
		}
	}
	conflicts := counter(t, reg1, "probegate_maintenance_store_conflicts_total") + counter(t, reg2, "probegate_maintenance_store_conflicts_total")
	if conflicts != n-1 {
		t.Errorf("conflicts counted %v, want %d", conflicts, n-1)
	}
	byOp := testutil.ToFloat64(m1.metrics.operations.WithLabelValues(opSwap, resultConflict)) +
		testutil.ToFloat64(m2.metrics.operations.WithLabelValues(opSwap, resultConflict))
	if byOp != n-1 {
		t.Errorf("swap operations with result conflict %v, want %d", byOp, n-1)
	}
}

// TestManagerJudgesEveryStoredEntry: an entry another replica stored, not
// yet applied here, counts against the budget: the write conflicts, the
// manager reads the new entries and refuses.
func TestManagerJudgesEveryStoredEntry(t *testing.T) {
	names := backendNames(3)
	ms := newMemStore("etcd", true)
	m, _ := startManager(t, healthyPool(t, names, 1, nil), ms, nil)
	other, _ := startManager(t, healthyPool(t, names, 1, nil), ms, nil)
	if _, err := other.enter(t.Context(), entries.Entry{Backend: "b00", Reason: "x"}, 0, false); err != nil {
		t.Fatal(err)
	}
	_, err := m.enter(t.Context(), entries.Entry{Backend: "b01", Reason: "x"}, 0, false)
	var be *budgetError
	if !errors.As(err, &be) {
		t.Fatalf("err %v, want a budgetError", err)
	}
	// Forced, it lands on top of the other entry rather than over it.
	g, err := m.enter(t.Context(), entries.Entry{Backend: "b01", Reason: "x"}, 0, true)
	if err != nil || !g.Forced || g.Budget.CurrentHealthy != 1 {
		t.Fatalf("forced: %+v %v", g, err)
	}
	if stored, _ := ms.stored(); len(stored) != 2 {
		t.Errorf("store holds %+v, want both entries", stored)
	}
}

// TestManagerStoreDownChangesNothing: with the store failing, enter and a
// shared store's exit answer a *storeError naming the store and change
// nothing, in the pool or the store; the failure shows in the metrics,
// and the store's return heals them.
func TestManagerStoreDownChangesNothing(t *testing.T) {
	names := backendNames(3)
	existing := entries.Entry{Backend: "b02", Reason: "disk", Since: time.Now().Add(-time.Hour)}
	ms := newMemStore("etcd", true, existing)
	p := healthyPool(t, names, 2, nil)
	m, reg := startManager(t, p, ms, nil)
	down := errors.New("connection refused")
	ms.set(func(s *memStore) { s.down = down })

	_, err := m.enter(t.Context(), entries.Entry{Backend: "b00", Reason: "x"}, 0, false)
	var se *storeError
	if !errors.As(err, &se) || se.Kind != "etcd" || !errors.Is(err, down) {
		t.Fatalf("enter: %v, want a storeError of the etcd store", err)
	}
	existed, saved, err := m.exit(t.Context(), "b02")
	if !errors.As(err, &se) || saved {
		t.Fatalf("exit: existed %v saved %v err %v, want a storeError", existed, saved, err)
	}
	if got := p.Maintenances(); len(got) != 1 || got[0].Backend != "b02" {
		t.Errorf("pool entries %+v, want b02's alone", got)
	}
	if got := p.Backends()[0].Served().State(); got != health.ServedHealthy {
		t.Errorf("b00 is %v, want healthy", got)
	}
	if stored, _ := ms.stored(); len(stored) != 1 || stored[0].Backend != "b02" {
		t.Errorf("store holds %+v", stored)
	}
	if m.Status().Healthy || counter(t, reg, "probegate_maintenance_store_up") != 0 ||
		testutil.ToFloat64(m.metrics.operations.WithLabelValues(opSwap, resultError)) != 1 ||
		testutil.ToFloat64(m.metrics.operations.WithLabelValues(opLoad, resultError)) != 1 {
		t.Error("the failures do not show in the store's health and metrics")
	}
	if s := m.Status(); s.Healthy || s.Error == "" {
		t.Errorf("status %+v, want unhealthy with the error", s)
	}

	ms.set(func(s *memStore) { s.down = nil })
	if _, err := m.enter(t.Context(), entries.Entry{Backend: "b00", Reason: "x"}, 0, false); err != nil {
		t.Fatalf("enter after the store returned: %v", err)
	}
	if !m.Status().Healthy || counter(t, reg, "probegate_maintenance_store_up") != 1 {
		t.Error("the store's return does not show")
	}
}

// TestManagerUnsavedExitEndsLocallyAndIsRetried: with a store of this
// replica's own, an end of maintenance whose save fails takes effect at
// once (saved false), and Run retries the save with back-off (1 s, then
// 2 s) until it lands.
func TestManagerUnsavedExitEndsLocallyAndIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		begin := time.Now()
		names := backendNames(3)
		ms := newMemStore("file", false, entries.Entry{Backend: "b01", Reason: "disk", Since: begin})
		p := healthyPool(t, names, 1, nil)
		m, reg := startManager(t, p, ms, nil)
		ms.set(func(s *memStore) { s.failSwaps = 3 })

		existed, saved, err := m.exit(t.Context(), "b01")
		if err != nil || !existed || saved {
			t.Fatalf("exit: existed %v saved %v err %v, want ended but not saved", existed, saved, err)
		}
		if len(p.Maintenances()) != 0 || p.Backends()[1].Served().State() != health.ServedUnhealthy {
			t.Fatalf("the end is not in force here: %+v, b1 %v", p.Maintenances(), p.Backends()[1].Served().State())
		}
		if counter(t, reg, "probegate_maintenance_store_up") != 0 {
			t.Error("the failed save does not show in probegate_maintenance_store_up")
		}

		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { m.Run(ctx) })
		// exit's save and the retries at 1 s and 2 s fail; the one at 4 s
		// lands.
		for _, c := range []struct {
			at     time.Duration
			swaps  int
			stored int
		}{{500 * time.Millisecond, 1, 1}, {1500 * time.Millisecond, 2, 1}, {2500 * time.Millisecond, 3, 1}, {3500 * time.Millisecond, 3, 1}, {4500 * time.Millisecond, 4, 0}, {8 * time.Second, 4, 0}} {
			time.Sleep(c.at - time.Since(begin))
			synctest.Wait()
			stored, swaps := ms.stored()
			if swaps != c.swaps || len(stored) != c.stored {
				t.Errorf("at %v: %d swaps, %d stored entries; want %d and %d", c.at, swaps, len(stored), c.swaps, c.stored)
			}
		}
		if len(p.Maintenances()) != 0 || !m.Status().Healthy {
			t.Errorf("after the save landed: entries %+v, healthy %v", p.Maintenances(), m.Status().Healthy)
		}
		cancel()
		wg.Wait()
	})
}

// TestManagerRetriesOnItsOwnClock: Run's back-off between retries of a
// failed save is measured on the manager's clock, not the machine's: with
// that clock standing still, the ticks that come every second retry
// nothing, and once it has moved by the back-off the next tick retries.
func TestManagerRetriesOnItsOwnClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := testclock.New(time.Now())
		ms := newMemStore("file", false, entries.Entry{Backend: "b01", Reason: "disk", Since: clock.Now()})
		m, _ := startManager(t, healthyPool(t, backendNames(3), 1, nil), ms, clock.Now)
		ms.set(func(s *memStore) { s.failSwaps = 2 })
		if _, saved, err := m.exit(t.Context(), "b01"); saved || err != nil {
			t.Fatalf("exit: saved %v err %v", saved, err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { m.Run(ctx) })
		// The first tick retries (nothing was due yet) and fails; the
		// back-off then holds for as long as the manager's clock stands.
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if _, swaps := ms.stored(); swaps != 2 {
			t.Errorf("after 10 s of ticks with the clock standing: %d swaps; want 2 (exit's and one retry)", swaps)
		}
		clock.Advance(minRetry)
		time.Sleep(time.Second)
		synctest.Wait()
		if stored, swaps := ms.stored(); swaps != 3 || len(stored) != 0 {
			t.Errorf("after the clock moved by the back-off: %d swaps, stored %+v; want the third swap to land", swaps, stored)
		}
		cancel()
		wg.Wait()
	})
}

// TestManagerFlushesAnUnsavedExitAtShutdown: an end whose save failed is
// tried once more when Run stops.
func TestManagerFlushesAnUnsavedExitAtShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := newMemStore("file", false, entries.Entry{Backend: "b00", Reason: "disk", Since: time.Now()})
		m, _ := startManager(t, healthyPool(t, backendNames(2), 1, nil), ms, nil)
		ms.set(func(s *memStore) { s.failSwaps = 1 })
		if _, saved, err := m.exit(t.Context(), "b00"); saved || err != nil {
			t.Fatalf("exit: saved %v err %v", saved, err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { m.Run(ctx) })
		synctest.Wait()
		cancel()
		wg.Wait()
		if stored, swaps := ms.stored(); len(stored) != 0 || swaps != 2 {
			t.Errorf("after shutdown: %d swaps, stored %+v; want the end saved by a second swap", swaps, stored)
		}
	})
}

// TestManagerRemovesExpiredEntriesFromTheStore: with a store of this
// replica's own, an entry whose Until came ends here at once, by this
// replica's clock, and Run removes it from the store.
func TestManagerRemovesExpiredEntriesFromTheStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		ms := newMemStore("file", false,
			entries.Entry{Backend: "b00", Reason: "short", Since: now, Until: now.Add(1500 * time.Millisecond)},
			entries.Entry{Backend: "b01", Reason: "long", Since: now})
		p := healthyPool(t, backendNames(3), 2, nil)
		m, _ := startManager(t, p, ms, nil)
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { m.Run(ctx) })

		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		if stored, _ := ms.stored(); len(stored) != 2 || len(p.Maintenances()) != 2 {
			t.Errorf("before the entry's until: stored %+v, pool %+v", stored, p.Maintenances())
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := p.Maintenances(); len(got) != 1 || got[0].Backend != "b01" {
			t.Errorf("pool entries after the until %+v, want b01's alone", got)
		}
		if stored, _ := ms.stored(); len(stored) != 1 || stored[0].Backend != "b01" {
			t.Errorf("store holds %+v after the until, want b01's alone", stored)
		}
		cancel()
		wg.Wait()
	})
}

// TestManagerAppliesOtherReplicasWrites: a change another replica stores
// reaches this replica's pool through the store's watch while Run runs.
func TestManagerAppliesOtherReplicasWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		names := backendNames(3)
		ms := newMemStore("etcd", true)
		p := healthyPool(t, names, 1, nil)
		m, _ := startManager(t, p, ms, nil)
		other, _ := startManager(t, healthyPool(t, names, 1, nil), ms, nil)
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { m.Run(ctx) })

		if _, err := other.enter(t.Context(), entries.Entry{Backend: "b02", Reason: "x"}, 0, false); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := p.Maintenances(); len(got) != 1 || got[0].Backend != "b02" {
			t.Errorf("entries here %+v, want b02's", got)
		}
		if _, _, err := other.exit(t.Context(), "b02"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := p.Maintenances(); len(got) != 0 {
			t.Errorf("entries here %+v after the other replica ended it", got)
		}
		cancel()
		wg.Wait()
	})
}

// TestManagerLeavesAnUnusedFeatureOff: a store that never held an entry
// does not mark maintenance in use, so a probegate that never had one
// exports none of its series; the first entry does, and the mark stays
// after it ends.
func TestManagerLeavesAnUnusedFeatureOff(t *testing.T) {
	p := healthyPool(t, []string{"a", "b"}, 1, nil)
	fs, err := store.OpenFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m, _ := startManager(t, p, fs, nil)
	if p.Snapshot().Maintenance {
		t.Fatal("an empty store marked maintenance in use")
	}
	if _, err := m.enter(t.Context(), entries.Entry{Backend: "a", Reason: "disk"}, 0, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.exit(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	if !p.Snapshot().Maintenance {
		t.Error("maintenance not in use after an entry came and went")
	}
}

package maintenance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/maintenance/store"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/internal/syncbuffer"
)

// The tests of this file are the faults of a store that several replicas
// share: skewed clocks, a key deleted by hand, a restart while the store
// cannot be reached, a replica cut from the store, corrupt data.

// skewed is a clock off the true one by offset.
func skewed(offset time.Duration) func() time.Time {
	return func() time.Time { return time.Now().Add(offset) }
}

// runManager runs m until the test ends.
func runManager(t *testing.T, m *Manager) {
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { m.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

// TestSkewedClocksEndNoEntry: with a shared store the store measures the
// ttl. A replica 20 minutes behind grants a 10-minute entry (its until is
// already past by the true clock), and a replica 20 minutes ahead sees it;
// neither ends it by its clock, neither writes anything while nothing
// changes, and both end it when the store's lease does.
func TestSkewedClocksEndNoEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		names := backendNames(3)
		ms := newMemStore("etcd", true)
		behindPool, aheadPool := healthyPool(t, names, 1, skewed(-20*time.Minute)), healthyPool(t, names, 1, skewed(20*time.Minute))
		behind, _ := startManager(t, behindPool, ms, skewed(-20*time.Minute))
		ahead, _ := startManager(t, aheadPool, ms, skewed(20*time.Minute))
		runManager(t, behind)
		runManager(t, ahead)

		g, err := behind.enter(t.Context(), entries.Entry{Backend: "b00", Reason: "kernel"}, 10*time.Minute, false)
		if err != nil || !g.Entry.Until.Before(time.Now()) {
			t.Fatalf("grant %+v %v, want one whose until is already past by the true clock", g.Entry, err)
		}
		_, swaps := ms.stored()
		for _, wait := range []time.Duration{time.Second, 11 * time.Minute} {
			time.Sleep(wait)
			synctest.Wait()
			for side, p := range map[string]*pool.Pool{"behind": behindPool, "ahead": aheadPool} {
				if got := p.Maintenances(); len(got) != 1 || got[0].Backend != "b00" {
					t.Errorf("after %v the replica %s has %+v, want b00's entry in force", wait, side, got)
				}
			}
		}
		if _, now := ms.stored(); now != swaps {
			t.Errorf("%d writes while nothing changed, want none", now-swaps)
		}
		ms.expire("b00")
		synctest.Wait()
		for side, p := range map[string]*pool.Pool{"behind": behindPool, "ahead": aheadPool} {
			if got := p.Maintenances(); len(got) != 0 {
				t.Errorf("the replica %s has %+v after the store ended the entry", side, got)
			}
		}
	})
}

// TestDeletedKeyMeansNoEntries: the entries deleted from the store by
// hand end every entry on the replica, which logs it, and the next grant
// stores them afresh instead of losing every compare-and-swap.
func TestDeletedKeyMeansNoEntries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := newMemStore("etcd", true, entries.Entry{Backend: "b01", Reason: "disk"})
		p := healthyPool(t, backendNames(3), 2, nil)
		logs := &syncbuffer.Buffer{}
		m := NewManager(p, ms, nil, prometheus.NewRegistry(), log.NewLogfmtLogger(logs), nil)
		if err := m.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		runManager(t, m)
		ms.deleteKey()
		synctest.Wait()
		if got := p.Maintenances(); len(got) != 0 {
			t.Errorf("entries %+v after the key was deleted, want none", got)
		}
		if !strings.Contains(logs.String(), "deleted from the store by another hand") {
			t.Errorf("the deletion is not logged:\n%s", logs)
		}
		if _, err := m.enter(t.Context(), entries.Entry{Backend: "b00", Reason: "x"}, 0, false); err != nil {
			t.Fatalf("grant after the deletion: %v", err)
		}
		if stored, _ := ms.stored(); len(stored) != 1 || stored[0].Backend != "b00" {
			t.Errorf("store holds %+v, want b00's entry", stored)
		}
	})
}

// TestRestartServesTheSavedState: a replica keeps the state it applied;
// restarted while the store cannot be reached, it serves that state
// (the entry stays in force), marked stale and not up; with no saved
// state it is not synced. When the store answers, it converges.
func TestRestartServesTheSavedState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		names := backendNames(3)
		ms := newMemStore("etcd", true)
		first := NewManager(healthyPool(t, names, 1, nil), ms, store.NewApplied(dir, "etcd /p"), prometheus.NewRegistry(), nil, nil)
		if err := first.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, err := first.enter(t.Context(), entries.Entry{Backend: "b01", Reason: "disk"}, time.Hour, false); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "maintenance-applied.json")); err != nil {
			t.Fatalf("no applied state kept: %v", err)
		}

		ms.set(func(s *memStore) { s.down = errors.New("connection refused") })
		p := healthyPool(t, names, 1, nil)
		reg := prometheus.NewRegistry()
		restarted := NewManager(p, ms, store.NewApplied(dir, "etcd /p"), reg, nil, nil)
		if err := restarted.Start(t.Context()); err == nil {
			t.Fatal("Start read a store that is down")
		}
		if got := p.Maintenances(); len(got) != 1 || got[0].Backend != "b01" {
			t.Errorf("restarted with the store down: entries %+v, want b01's as saved", got)
		}
		if s := restarted.Status(); !s.Synced || !s.Stale || s.Healthy || counter(t, reg, "probegate_maintenance_store_up") != 0 {
			t.Errorf("status %+v, store_up %v; want synced, stale, down", s, counter(t, reg, "probegate_maintenance_store_up"))
		}
		fresh := NewManager(healthyPool(t, names, 1, nil), ms, store.NewApplied(t.TempDir(), "etcd /p"), prometheus.NewRegistry(), nil, nil)
		fresh.Start(t.Context())
		if fresh.Synced() {
			t.Error("a replica with neither the store nor a saved state is synced")
		}

		ms.expire("b01")
		ms.set(func(s *memStore) { s.down = nil })
		runManager(t, restarted)
		time.Sleep(time.Second)
		synctest.Wait()
		if got := p.Maintenances(); len(got) != 0 {
			t.Errorf("entries %+v a second after the store answered, want the store's: none", got)
		}
		if s := restarted.Status(); s.Stale || !s.Healthy || counter(t, reg, "probegate_maintenance_store_up") != 1 {
			t.Errorf("status %+v after the store answered, want current and up", s)
		}
	})
}

// TestDeleteIsDecidedByTheStore: a replica that never saw an entry (its
// watch cut) ends it all the same by reading the store first, and with
// the store unreachable a DELETE is refused, never a 200 for an entry it
// cannot see.
func TestDeleteIsDecidedByTheStore(t *testing.T) {
	names := backendNames(3)
	ms := newMemStore("etcd", true)
	cut, _ := startManager(t, healthyPool(t, names, 1, nil), ms, nil)
	other, _ := startManager(t, healthyPool(t, names, 1, nil), ms, nil)
	if _, err := other.enter(t.Context(), entries.Entry{Backend: "b02", Reason: "x"}, 0, false); err != nil {
		t.Fatal(err)
	}
	ms.set(func(s *memStore) { s.down = errors.New("connection refused") })
	existed, saved, err := cut.exit(t.Context(), "b02")
	var se *storeError
	if !errors.As(err, &se) || saved || existed {
		t.Errorf("DELETE with the store down: existed %v saved %v err %v, want a storeError", existed, saved, err)
	}
	ms.set(func(s *memStore) { s.down = nil })
	if existed, saved, err := cut.exit(t.Context(), "b02"); err != nil || !existed || !saved {
		t.Errorf("DELETE of an entry this replica never saw: existed %v saved %v err %v, want ended", existed, saved, err)
	}
	if stored, _ := ms.stored(); len(stored) != 0 {
		t.Errorf("store holds %+v, want nothing", stored)
	}
}

// TestCorruptDataIsLoggedOncePerRevision: corrupt stored data read again
// and again is logged once for each revision it is at, and marks the
// store down.
func TestCorruptDataIsLoggedOncePerRevision(t *testing.T) {
	logs := &syncbuffer.Buffer{}
	reg := prometheus.NewRegistry()
	m := NewManager(healthyPool(t, backendNames(2), 1, nil), newMemStore("etcd", true), nil, reg, log.NewLogfmtLogger(logs), nil)
	for _, rev := range []int64{7, 7, 7, 9, 9} {
		m.observe(store.State{Revision: rev}, &store.CorruptError{Key: "/p/maintenance", Revision: rev, Err: errors.New("invalid character")})
	}
	if n := strings.Count(logs.String(), "are corrupt"); n != 2 {
		t.Errorf("%d log lines for corrupt data at two revisions, want 2:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), "key=/p/maintenance revision=9") || m.Status().Healthy || counter(t, reg, "probegate_maintenance_store_up") != 0 {
		t.Errorf("the corrupt key is not named, or the store not down:\n%s", logs)
	}
}

// TestFailedSaveOfTheAppliedStateShows: a replica that cannot keep the
// state it applied reports the store down, with the error, until a save
// succeeds.
func TestFailedSaveOfTheAppliedStateShows(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ms := newMemStore("etcd", true)
	reg := prometheus.NewRegistry()
	m := NewManager(healthyPool(t, backendNames(3), 1, nil), ms, store.NewApplied(dir, "etcd /p"), reg, nil, nil)
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := m.enter(t.Context(), entries.Entry{Backend: "b00", Reason: "x"}, 0, false); err != nil {
		t.Fatal(err)
	}
	if s := m.Status(); s.Healthy || s.Error == "" || counter(t, reg, "probegate_maintenance_store_up") != 0 {
		t.Errorf("status %+v with the applied state unsaved, want down with the error", s)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.exit(t.Context(), "b00"); err != nil {
		t.Fatal(err)
	}
	if s := m.Status(); !s.Healthy || counter(t, reg, "probegate_maintenance_store_up") != 1 {
		t.Errorf("status %+v after a save succeeded, want up", s)
	}
}

// TestRestartWithTheStoreUpIgnoresTheSavedState: a replica restarted
// while the store answers applies the store's state alone, so a backend
// whose entry ended while it was down never passes through maintenance
// (and, probed, would then have to earn its readmission).
func TestRestartWithTheStoreUpIgnoresTheSavedState(t *testing.T) {
	dir := t.TempDir()
	names := backendNames(3)
	ms := newMemStore("etcd", true)
	first := NewManager(healthyPool(t, names, 1, nil), ms, store.NewApplied(dir, "etcd /p"), prometheus.NewRegistry(), nil, nil)
	if err := first.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := first.enter(t.Context(), entries.Entry{Backend: "b01", Reason: "disk"}, time.Hour, false); err != nil {
		t.Fatal(err)
	}
	ms.expire("b01")
	p := healthyPool(t, names, 1, nil)
	restarted := NewManager(p, ms, store.NewApplied(dir, "etcd /p"), prometheus.NewRegistry(), nil, nil)
	if err := restarted.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := p.Backends()[1].Served().State(); got != health.ServedHealthy || len(p.Maintenances()) != 0 {
		t.Errorf("b01 is %v with entries %+v, want healthy and no entry", got, p.Maintenances())
	}
}

// TestStoreRestoredFromASnapshotIsTheTruth: etcd restored from an older
// snapshot answers revisions below the one a replica applied. The replica
// takes the store's state as the truth, and says so, rather than serving
// its newer state forever while reporting the store healthy.
func TestStoreRestoredFromASnapshotIsTheTruth(t *testing.T) {
	var logs syncbuffer.Buffer
	ms := newMemStore("etcd", true)
	p := healthyPool(t, backendNames(3), 1, nil)
	m := NewManager(p, ms, nil, prometheus.NewRegistry(), log.NewLogfmtLogger(&logs), nil)
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := m.enter(t.Context(), entries.Entry{Backend: "b01", Reason: "disk"}, 0, false); err != nil {
		t.Fatal(err)
	}
	ms.set(func(s *memStore) { s.rev += 100 })
	if _, err := m.refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The snapshot predates b01's entry.
	ms.set(func(s *memStore) { s.rev, s.token, s.entries = 5, 1, []entries.Entry{{Backend: "b02", Reason: "old"}} })
	if _, err := m.refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := p.Maintenances(); len(got) != 1 || got[0].Backend != "b02" {
		t.Errorf("entries %+v after the restore, want the store's: b02", got)
	}
	if s := m.Status(); !s.Healthy || s.Stale {
		t.Errorf("status %+v after the restore, want healthy and current", s)
	}
	if !strings.Contains(logs.String(), "went back in revisions") {
		t.Errorf("the restore is not logged: %s", logs.String())
	}
	if existed, saved, err := m.exit(t.Context(), "b02"); !existed || !saved || err != nil {
		t.Errorf("an end after the restore: existed %v, saved %v, %v; want both", existed, saved, err)
	}
	if got, _ := ms.stored(); len(got) != 0 {
		t.Errorf("the store holds %+v after the end, want nothing", got)
	}
}

// TestNothingChangedTouchesNothing: etcd's revision moves with every
// replica view published, twice a second. A read that finds the same
// document and the same entries in force (their times read back in
// another location) neither tells the pool again nor rewrites the saved
// state; it only moves the revision a write compares.
func TestNothingChangedTouchesNothing(t *testing.T) {
	dir := t.TempDir()
	ms := newMemStore("etcd", true)
	p := healthyPool(t, backendNames(3), 1, nil)
	m := NewManager(p, ms, store.NewApplied(dir, "etcd /p"), prometheus.NewRegistry(), nil, nil)
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := m.enter(t.Context(), entries.Entry{Backend: "b01", Reason: "disk"}, 0, false); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "maintenance-applied.json")
	before, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	// The pool is told something else, so that any SetMaintenance from
	// the manager shows.
	p.SetMaintenance(nil, entries.KeptByClock)
	// The entries as read back from a store: the same instants in UTC.
	ms.set(func(s *memStore) {
		for i := range s.entries {
			s.entries[i].Since = s.entries[i].Since.UTC()
		}
		s.rev += 3
	})
	if _, err := m.refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := p.Maintenances(); len(got) != 0 {
		t.Errorf("the pool was told the entries again: %+v", got)
	}
	after, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("the saved state was rewritten with nothing changed")
	}
	if st, _ := ms.Load(t.Context()); m.base().Revision != st.Revision {
		t.Errorf("revision %d, want the store's %d", m.base().Revision, st.Revision)
	}
}

// TestCompactedWatchIsWarnedAndCounted: a watch that had to resume from a
// compacted revision is re-read at once; the replica says so in a warning
// and in probegate_maintenance_store_operations_total{operation="watch",
// result="compacted"}, and the store stays up: it answered.
func TestCompactedWatchIsWarnedAndCounted(t *testing.T) {
	ms := newMemStore("etcd", true, entries.Entry{Backend: "b01", Reason: "disk"})
	logs := &syncbuffer.Buffer{}
	m := NewManager(healthyPool(t, backendNames(3), 1, nil), ms, store.NewApplied(t.TempDir(), "etcd /p"), prometheus.NewRegistry(), log.NewLogfmtLogger(logs), nil)
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	m.observe(store.State{}, fmt.Errorf("etcd: the watch from revision 3, compacted up to 9: %w", store.ErrCompacted))
	if !strings.Contains(logs.String(), "level=warn") || !strings.Contains(logs.String(), "compacted up to 9") {
		t.Errorf("the compaction is not warned of:\n%s", logs)
	}
	if n := testutil.ToFloat64(m.metrics.operations.WithLabelValues(opWatch, resultCompacted)); n != 1 {
		t.Errorf("operations{watch, compacted} = %v, want 1", n)
	}
	if !m.Status().Healthy || testutil.ToFloat64(m.metrics.storeUp) != 1 {
		t.Errorf("a compacted watch took the store down: %+v, store_up %v", m.Status(), testutil.ToFloat64(m.metrics.storeUp))
	}
	if got := m.pool.Maintenances(); len(got) != 1 {
		t.Errorf("entries %+v after the compaction, want b01's kept until the fresh read", got)
	}
}

package maintenance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/maintenance/store"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// memStore is an in-memory Store for unit tests: a compare-and-swap over a
// token that several managers may share (shared true stands for etcd,
// false for the file), and that a test can make fail. Shared, it measures
// ttls as etcd does: a granted entry ends when the test expires it, as
// its lease would, whatever any clock says.
type memStore struct {
	kind   string
	shared bool

	mu sync.Mutex
	// rev is the store's revision, moved by every change; token is the
	// revision of the last write of the entries, 0 when they were
	// deleted.
	rev, token int64
	entries    []entries.Entry
	// down is the error every Load and Swap answers while it is set: the
	// store cannot be reached.
	down error
	// failSwaps is how many of the next Swaps fail with errSaveFailed: a
	// save that does not land.
	failSwaps int
	// swaps counts the Swap calls, landed or not.
	swaps int
	// beforeSwap, when set, runs at the start of every Swap, before the
	// revision is compared: a test holds writers there to make them race.
	beforeSwap func()
	// wake is closed and replaced on every change, for Watch.
	wake chan struct{}
}

var errSaveFailed = errors.New("no space left on device")

func newMemStore(kind string, shared bool, entries ...entries.Entry) *memStore {
	return &memStore{kind: kind, shared: shared, rev: 1, token: 1, entries: entries, wake: make(chan struct{})}
}

func (s *memStore) Kind() string { return s.kind }
func (s *memStore) Shared() bool { return s.shared }
func (s *memStore) Close() error { return nil }

func (s *memStore) Load(context.Context) (store.State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down != nil {
		return store.State{}, s.down
	}
	return s.stateLocked(), nil
}

func (s *memStore) stateLocked() store.State {
	return store.State{Entries: slices.Clone(s.entries), Revision: s.rev, Token: s.token}
}

func (s *memStore) Swap(_ context.Context, base store.State, w store.Write) (store.State, error) {
	s.mu.Lock()
	hold := s.beforeSwap
	s.mu.Unlock()
	if hold != nil {
		hold()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.swaps++
	switch {
	case s.down != nil:
		return store.State{}, s.down
	case s.failSwaps > 0:
		s.failSwaps--
		return store.State{}, errSaveFailed
	case base.Token != s.token:
		return store.State{}, store.ErrConflict
	}
	s.entries = slices.Clone(w.Entries)
	s.changedLocked()
	s.token = s.rev
	return s.stateLocked(), nil
}

// changedLocked moves the revision and wakes the watchers.
func (s *memStore) changedLocked() {
	s.rev++
	close(s.wake)
	s.wake = make(chan struct{})
}

// expire ends the named backend's entry as the store's lease would: on
// the store's time, not any replica's.
func (s *memStore) expire(backend string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = slices.DeleteFunc(s.entries, func(e entries.Entry) bool { return e.Backend == backend })
	s.changedLocked()
}

// deleteKey deletes the stored entries, as `etcdctl del` does.
func (s *memStore) deleteKey() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries, s.token = nil, 0
	s.changedLocked()
}

// Watch hands every new state to changed while ctx lasts, for a shared
// store; an unshared one returns at once, as the file store does.
func (s *memStore) Watch(ctx context.Context, changed func(store.State, error)) {
	if !s.shared {
		return
	}
	var seen int64
	for {
		s.mu.Lock()
		st := s.stateLocked()
		wake := s.wake
		s.mu.Unlock()
		if st.Revision > seen {
			seen = st.Revision
			changed(st, nil)
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		}
	}
}

// set changes the store's fields under its lock.
func (s *memStore) set(f func(s *memStore)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// stored returns the entries the store holds and the number of Swap calls
// so far.
func (s *memStore) stored() ([]entries.Entry, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.entries), s.swaps
}

// healthyPool is a pool of healthy probed backends with the given names whose
// readiness budget allows `allowed` disruptions; now is its clock (nil:
// the real one).
func healthyPool(t *testing.T, names []string, allowed int, now func() time.Time) *pool.Pool {
	t.Helper()
	p := pool.New(nil, now)
	s := pool.Settings{Readiness: config.Readiness{MinAvailable: &config.IntOrPercent{Value: len(names) - allowed}}}
	if err := p.Apply(probedTargets(names), s); err != nil {
		t.Fatal(err)
	}
	for _, b := range p.Backends() {
		b.RecordProbe(health.StatusResult(200))
	}
	return p
}

// probedTargets are probed backends with the given names.
func probedTargets(names []string) []pool.Target {
	probe := config.HealthProbe{Enabled: true, Path: "/healthz", Interval: model.Duration(5 * time.Second),
		Timeout: model.Duration(time.Second), Failures: 3, Successes: 2}
	var targets []pool.Target
	for i, name := range names {
		targets = append(targets, pool.Target{Name: name, URL: fmt.Sprintf("http://127.0.0.1:%d", 19001+i),
			Probe: probe, ClientConfig: commoncfg.DefaultHTTPClientConfig})
	}
	return targets
}

// startManager makes a manager over s for p and applies what the
// store holds.
func startManager(t *testing.T, p *pool.Pool, s store.Store, now func() time.Time) (*Manager, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := NewManager(p, s, nil, reg, nil, now)
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return m, reg
}

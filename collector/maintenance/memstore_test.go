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

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/maintenance/entries"
	"github.com/probegate/probegate/collector/maintenance/store"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// memStore is an in-memory Store for unit tests: a compare-and-swap over a
// revision that several managers may share (shared true stands for etcd,
// false for the file), and that a test can make fail.
type memStore struct {
	kind   string
	shared bool

	mu      sync.Mutex
	rev     int64
	entries []entries.Entry
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
	return &memStore{kind: kind, shared: shared, rev: 1, entries: entries, wake: make(chan struct{})}
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
	return store.State{Entries: slices.Clone(s.entries), Revision: s.rev}, nil
}

func (s *memStore) Swap(_ context.Context, rev int64, entries []entries.Entry) (int64, error) {
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
		return s.rev, s.down
	case s.failSwaps > 0:
		s.failSwaps--
		return s.rev, errSaveFailed
	case rev != s.rev:
		return s.rev, store.ErrConflict
	}
	s.rev++
	s.entries = slices.Clone(entries)
	close(s.wake)
	s.wake = make(chan struct{})
	return s.rev, nil
}

// Watch hands every new state to changed while ctx lasts, for a shared
// store; an unshared one returns at once, as the file store does.
func (s *memStore) Watch(ctx context.Context, changed func(store.State)) {
	if !s.shared {
		return
	}
	var seen int64
	for {
		s.mu.Lock()
		st := store.State{Entries: slices.Clone(s.entries), Revision: s.rev}
		wake := s.wake
		s.mu.Unlock()
		if st.Revision > seen {
			seen = st.Revision
			changed(st)
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
	probe := config.HealthProbe{Enabled: true, Path: "/healthz", Interval: model.Duration(5 * time.Second),
		Timeout: model.Duration(time.Second), Failures: 3, Successes: 2}
	var targets []pool.Target
	for i, name := range names {
		targets = append(targets, pool.Target{Name: name, URL: fmt.Sprintf("http://127.0.0.1:%d", 19001+i),
			Probe: probe, ClientConfig: commoncfg.DefaultHTTPClientConfig})
	}
	p := pool.New(nil, now)
	s := pool.Settings{Readiness: config.Readiness{MinAvailable: &config.IntOrPercent{Value: len(names) - allowed}}}
	if err := p.Apply(targets, s); err != nil {
		t.Fatal(err)
	}
	for _, b := range p.Backends() {
		b.RecordProbe(health.StatusResult(200))
	}
	return p
}

// startManager makes a manager over s for p and applies what the
// store holds.
func startManager(t *testing.T, p *pool.Pool, s store.Store, now func() time.Time) (*Manager, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := NewManager(p, s, reg, nil, now)
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return m, reg
}

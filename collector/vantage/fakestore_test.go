package vantage

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/probegate/probegate/collector/fleet"
	"github.com/probegate/probegate/collector/maintenance/store"
)

// fakeStore is the store of several replicas in memory: each replica's
// handle (of) publishes under its own lease, and every handle's watcher
// is handed each write as it lands, as etcd's watch would.
type fakeStore struct {
	mu       sync.Mutex
	keys     map[string][]byte
	leases   map[string]int64 // replica → its lease
	watchers []func(store.VerdictUpdate)
	nextID   int64
	writes   int
	// silent stops handing writes on to the watchers, as a broken watch.
	silent bool
}

func newFakeStore() *fakeStore {
	return &fakeStore{keys: map[string][]byte{}, leases: map[string]int64{}}
}

// replicaStore is one replica's handle of a fakeStore.
type replicaStore struct {
	s       *fakeStore
	replica string
}

func (s *fakeStore) of(replica string) *replicaStore {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	s.leases[replica] = s.nextID
	return &replicaStore{s: s, replica: replica}
}

const fakePrefix = "/verdicts/"

func (r *replicaStore) VerdictKey(replica, backend string) string {
	return fakePrefix + replica + "/" + backend
}

func (r *replicaStore) PublishVerdicts(_ context.Context, ops []fleet.Op) (int64, error) {
	s := r.s
	s.mu.Lock()
	lease, ok := s.leases[r.replica]
	if !ok {
		s.mu.Unlock()
		return 0, store.ErrNoViewLease
	}
	s.writes++
	var u store.VerdictUpdate
	for _, op := range ops {
		replica, backend, _ := strings.Cut(strings.TrimPrefix(op.Key, fakePrefix), "/")
		sv := store.StoredVerdict{Replica: replica, Backend: backend}
		if op.Delete {
			delete(s.keys, op.Key)
		} else {
			s.keys[op.Key] = op.Value
			sv.Value = op.Value
		}
		u.Verdicts = append(u.Verdicts, sv)
	}
	watchers := slices.Clone(s.watchers)
	if s.silent {
		watchers = nil
	}
	s.mu.Unlock()
	for _, w := range watchers {
		w(u)
	}
	return lease, nil
}

func (r *replicaStore) ViewLease() int64 {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return r.s.leases[r.replica]
}

// WatchVerdicts registers update and hands it what is stored; it returns
// at once (the tests drive the coordinators by hand).
func (r *replicaStore) WatchVerdicts(_ context.Context, update func(store.VerdictUpdate)) {
	s := r.s
	s.mu.Lock()
	s.watchers = append(s.watchers, update)
	u := store.VerdictUpdate{Reset: true}
	for key, value := range s.keys {
		replica, backend, _ := strings.Cut(strings.TrimPrefix(key, fakePrefix), "/")
		u.Verdicts = append(u.Verdicts, store.StoredVerdict{Replica: replica, Backend: backend, Value: value})
	}
	s.mu.Unlock()
	update(u)
}

// expire ends a replica's lease: its keys are deleted, as etcd does.
func (s *fakeStore) expire(replica string) {
	s.mu.Lock()
	delete(s.leases, replica)
	var u store.VerdictUpdate
	for key := range s.keys {
		if strings.HasPrefix(key, fakePrefix+replica+"/") {
			delete(s.keys, key)
			_, backend, _ := strings.Cut(strings.TrimPrefix(key, fakePrefix), "/")
			u.Verdicts = append(u.Verdicts, store.StoredVerdict{Replica: replica, Backend: backend})
		}
	}
	watchers := slices.Clone(s.watchers)
	s.mu.Unlock()
	for _, w := range watchers {
		w(u)
	}
}

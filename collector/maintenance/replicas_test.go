package maintenance

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/probegate/probegate/collector/maintenance/store"
)

// memRegistry is an in-memory Registry for unit tests. It keeps views as
// bytes, in a map, so that their order is the map's: sorting them is the
// reader's job.
type memRegistry struct {
	mu    sync.Mutex
	views map[string][]byte
	// ghosts are views stored without a lease, as by hand: the store
	// reports them ignored.
	ghosts    map[string]bool
	publishes int
	withdrawn []string
	down      bool
	// tooMany is the number of views the store reports left out.
	tooMany int
}

func newMemRegistry(t *testing.T, views ...ReplicaView) *memRegistry {
	r := &memRegistry{views: map[string][]byte{}, ghosts: map[string]bool{}}
	for _, v := range views {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		r.views[v.Name] = data
	}
	return r
}

func (r *memRegistry) Publish(_ context.Context, name string, view []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down {
		return errors.New("unreachable")
	}
	r.publishes++
	r.views[name] = view
	return nil
}

func (r *memRegistry) Withdraw(_ context.Context, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.withdrawn = append(r.withdrawn, name)
	delete(r.views, name)
	return nil
}

func (r *memRegistry) Replicas(context.Context) ([]store.StoredView, int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down {
		return nil, 0, errors.New("unreachable")
	}
	views := make([]store.StoredView, 0, len(r.views))
	for name, v := range r.views {
		if r.ghosts[name] {
			views = append(views, store.StoredView{Name: name, Ignored: store.IgnoredNoLease})
		} else {
			views = append(views, store.StoredView{Name: name, Value: v})
		}
	}
	return views, r.tooMany, nil
}

func (r *memRegistry) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.publishes
}

// TestReplicasPublishFollowAndWithdraw: a replica publishes its view at
// once, again on a change and every 5 s otherwise; it follows its peers
// (counted by state in probegate_replicas), says when their views are not
// current, and withdraws its view when it stops.
func TestReplicasPublishFollowAndWithdraw(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		begin := time.Now()
		registry := newMemRegistry(t,
			ReplicaView{Name: "r2", Ready: true, BudgetHolds: true, Draining: true},
			ReplicaView{Name: "r3"})
		var ready atomic.Bool
		ready.Store(true)
		self := func(context.Context) ReplicaView {
			return ReplicaView{Name: "r1", Ready: ready.Load(), BudgetHolds: ready.Load(), Expected: 3}
		}
		reg := prometheus.NewRegistry()
		r := NewReplicas(registry, self, reg, nil, time.Now)
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { r.Run(ctx) })
		synctest.Wait()

		if n := registry.count(); n != 1 {
			t.Errorf("%d publications at start, want 1", n)
		}
		if live := r.Live(); len(live) != 3 || live[0].Name != "r1" || !live[0].Updated.Equal(begin) {
			t.Errorf("live %+v, want r1 (published at %v), r2, r3", live, begin)
		}
		peers, fresh := r.Peers("r1")
		if len(peers) != 2 || !fresh || slices.ContainsFunc(peers, func(v ReplicaView) bool { return v.Name == "r1" }) {
			t.Errorf("peers %+v fresh %v, want r2 and r3, current", peers, fresh)
		}
		gauge := func(state string) float64 {
			return testutil.ToFloat64(r.gauge.WithLabelValues(state))
		}
		if gauge("ready") != 1 || gauge("unready") != 1 || gauge("draining") != 1 {
			t.Errorf("probegate_replicas ready %v unready %v draining %v, want 1 each", gauge("ready"), gauge("unready"), gauge("draining"))
		}

		time.Sleep(4500 * time.Millisecond)
		synctest.Wait()
		if n := registry.count(); n != 1 {
			t.Errorf("%d publications after 4.5 s of an unchanged view, want 1", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := registry.count(); n != 2 {
			t.Errorf("%d publications after 5.5 s, want 2 (refreshed every 5 s)", n)
		}
		ready.Store(false)
		time.Sleep(time.Second)
		synctest.Wait()
		if n := registry.count(); n != 3 || gauge("unready") != 2 {
			t.Errorf("after a change: %d publications, %v unready; want 3 and 2", n, gauge("unready"))
		}

		registry.mu.Lock()
		registry.down = true
		registry.mu.Unlock()
		time.Sleep(time.Second)
		synctest.Wait()
		if _, fresh := r.Peers("r1"); fresh {
			t.Error("peers' views reported current while the registry is unreachable")
		}
		registry.mu.Lock()
		registry.down = false
		registry.mu.Unlock()

		cancel()
		wg.Wait()
		if registry.withdrawn == nil || registry.withdrawn[0] != "r1" {
			t.Errorf("withdrawn %v, want r1", registry.withdrawn)
		}
	})
}

// TestReplicasSkipUnreadableViews: a published value that does not parse,
// or names no replica, is left out of the live views, and the others are
// still listed, sorted by name.
func TestReplicasSkipUnreadableViews(t *testing.T) {
	got, ignored := checkViews([]store.StoredView{{Name: "r2", Value: []byte(`{"name":"r2"}`)}, {Name: "x", Value: []byte("garbage")},
		{Name: "y", Value: []byte(`{"ready":true}`)}, {Name: "r1", Value: []byte(`{"name":"r1"}`)}})
	if len(got) != 2 || got[0].Name != "r1" || got[1].Name != "r2" {
		t.Errorf("views %+v, want r1 and r2", got)
	}
	if ignored["x"] != store.IgnoredMalformed || ignored["y"] != store.IgnoredMalformed || len(ignored) != 2 {
		t.Errorf("ignored %v, want x and y malformed", ignored)
	}
}

// TestGhostViewsNeitherUnreadyNorReadyAnyone: views the store reports
// without a live lease, or whose name is not their key's, are not peers:
// a ghost whose budget holds cannot fail a replica's peer-relative
// readiness. Each is logged and counted once, however often it is read.
func TestGhostViewsNeitherUnreadyNorReadyAnyone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		registry := newMemRegistry(t, ReplicaView{Name: "r2"},
			ReplicaView{Name: "ghost", Ready: true, BudgetHolds: true, Updated: time.Now()})
		registry.ghosts["ghost"] = true
		registry.views["impostor"] = []byte(`{"name":"r9","budget_holds":true}`)
		self := func(context.Context) ReplicaView { return ReplicaView{Name: "r1"} }
		reg := prometheus.NewRegistry()
		r := NewReplicas(registry, self, reg, nil, time.Now)
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { r.Run(ctx) })
		time.Sleep(3 * time.Second)
		synctest.Wait()

		peers, fresh := r.Peers("r1")
		if len(peers) != 1 || peers[0].Name != "r2" || !fresh {
			t.Errorf("peers %+v, want r2 alone", peers)
		}
		if verdict, why := JudgePeers(peers, fresh, PoolBudget); verdict != PeerWarn {
			t.Errorf("a ghost's budget decided: %v (%s)", verdict, why)
		}
		for reason, want := range map[string]float64{store.IgnoredNoLease: 1, store.IgnoredNameMismatch: 1, store.IgnoredMalformed: 0} {
			if got := testutil.ToFloat64(r.ignored.WithLabelValues(reason)); got != want {
				t.Errorf("probegate_replica_views_ignored_total{reason=%q} = %v after 4 reads, want %v", reason, got, want)
			}
		}
		cancel()
		wg.Wait()
	})
}

// TestTooManyCountsEveryViewLeftOut: too_many counts the views left out
// as their number rises, not only when it first leaves zero; a number
// that holds or falls adds nothing, since those views were counted.
func TestTooManyCountsEveryViewLeftOut(t *testing.T) {
	registry := newMemRegistry(t, ReplicaView{Name: "r1"})
	r := NewReplicas(registry, func(context.Context) ReplicaView { return ReplicaView{Name: "r1"} }, prometheus.NewRegistry(), nil, time.Now)
	for _, leftOut := range []int{3, 3, 10, 4, 0, 2} {
		registry.mu.Lock()
		registry.tooMany = leftOut
		registry.mu.Unlock()
		r.refresh(t.Context())
	}
	if got := testutil.ToFloat64(r.ignored.WithLabelValues(store.IgnoredTooMany)); got != 3+7+2 {
		t.Errorf("too_many = %v after 3, 3, 10, 4, 0, 2 left out, want 12 (each rise)", got)
	}
}

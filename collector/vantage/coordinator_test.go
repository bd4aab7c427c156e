package vantage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/collector/fleet"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/maintenance/store"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/internal/testconfig"
)

// fleetRig is several replicas sharing the probing of one pool through a
// fakeStore, on synthetic time: each round every replica probes what it
// probes (the result comes from outcome) and then steps its coordinator.
type fleetRig struct {
	t        *testing.T
	store    *fakeStore
	names    []string
	pools    map[string]*pool.Pool
	coords   map[string]*Coordinator
	backends []string
	// live are the names Members returns, fresh whether the read is
	// current; outcome is the result replica's probe of backend gets.
	live    []string
	fresh   bool
	readAt  time.Time
	outcome func(replica, backend string) health.Result
	now     time.Time
	probes  int
}

var (
	ok      = health.Result{Class: health.ClassOK, StatusCode: 200}
	failed  = health.Result{Class: health.ClassFailed, Reason: health.ReasonTimeout}
	refused = health.Result{Class: health.ClassRefused, StatusCode: 404}
)

func newFleetRig(t *testing.T, replicas, backends, vantagePoints int) *fleetRig {
	r := &fleetRig{t: t, store: newFakeStore(), pools: map[string]*pool.Pool{}, coords: map[string]*Coordinator{},
		fresh: true, now: time.Unix(1_700_000_000, 0), outcome: func(string, string) health.Result { return ok }}
	targets := make([]pool.Target, backends)
	for i := range targets {
		name := fmt.Sprintf("b%02d", i)
		r.backends = append(r.backends, name)
		targets[i] = pool.Target{Name: name, URL: fmt.Sprintf("http://127.0.0.1:%d", 19001+i), Probe: testconfig.Probe(), ClientConfig: commoncfg.DefaultHTTPClientConfig}
	}
	for i := range replicas {
		name := fmt.Sprintf("r%d", i+1)
		r.names = append(r.names, name)
		p := pool.New(nil, func() time.Time { return r.now })
		if err := p.Apply(targets, pool.Settings{}); err != nil {
			t.Fatal(err)
		}
		c := New(Options{Pool: p, Self: name, VantagePoints: vantagePoints, Store: r.store.of(name),
			Members: r.members, Resync: func() {},
			Now: func() time.Time { return r.now }})
		c.attach()
		c.o.Store.WatchVerdicts(context.Background(), c.onUpdate)
		r.pools[name], r.coords[name] = p, c
	}
	r.live = slices.Clone(r.names)
	return r
}

// members is what Options.Members returns: the live names, read now
// while the reads are fresh.
func (r *fleetRig) members() ([]string, time.Time) {
	if r.fresh {
		r.readAt = r.now
	}
	return slices.Clone(r.live), r.readAt
}

// round is one probe interval: every live replica probes what it probes
// here, then each coordinator takes a few steps of its tick.
func (r *fleetRig) round() {
	r.t.Helper()
	for _, name := range r.live {
		for _, b := range r.pools[name].Backends() {
			if b.ProbedHere() {
				r.probes++
				b.RecordProbe(r.outcome(name, b.Name))
			}
		}
	}
	for range int(time.Second / tick) {
		r.now = r.now.Add(tick)
		for _, name := range r.live {
			r.coords[name].step(context.Background(), r.now)
		}
	}
}

func (r *fleetRig) rounds(n int) {
	r.t.Helper()
	for range n {
		r.round()
	}
}

// probedBy are the live replicas that probe backend.
func (r *fleetRig) probedBy(backend string) []string {
	var by []string
	for _, name := range r.live {
		if r.pools[name].ByName(backend).ProbedHere() {
			by = append(by, name)
		}
	}
	return by
}

func (r *fleetRig) served(replica, backend string) health.ServedState {
	s, _ := r.pools[replica].SnapshotOf(backend)
	return s.Served.State()
}

// TestEachBackendIsProbedByItsVantagePointsOnly: with three replicas and
// two vantage points, each backend is probed by two replicas, the same
// ones every replica assigns it to, and every replica serves it by the
// shared verdict.
func TestEachBackendIsProbedByItsVantagePointsOnly(t *testing.T) {
	r := newFleetRig(t, 3, 12, 2)
	r.rounds(3)
	for _, backend := range r.backends {
		by := r.probedBy(backend)
		if len(by) != 2 {
			t.Errorf("%s is probed by %v, want two replicas", backend, by)
		}
		want := r.coords["r1"].members.Assign(nil, backend, 2)
		slices.Sort(want)
		if !slices.Equal(by, want) {
			t.Errorf("%s is probed by %v, want its vantage points %v", backend, by, want)
		}
		for _, name := range r.names {
			s, _ := r.pools[name].SnapshotOf(backend)
			if s.Fleet == nil || !s.Fleet.Shared || s.Served.State() != health.ServedHealthy {
				t.Errorf("%s on %s: fleet %+v, served %v; want a shared healthy verdict", backend, name, s.Fleet, s.Served.State())
			}
		}
	}
	if snap := r.pools["r1"].Snapshot(); snap.Probing != pool.ProbingShared {
		t.Errorf("probing = %q, want shared", snap.Probing)
	}
	r.probes = 0
	r.round()
	if r.probes != 24 {
		t.Errorf("one interval took %d probes, want 24 (12 backends × 2 vantage points, not × 3 replicas)", r.probes)
	}
}

// TestKilledBackendIsOutOfServiceEverywhere: both vantage points of a
// dead backend say unhealthy, and every replica, those that do not probe
// it included, takes it out of service; once it answers again, it is
// back everywhere.
func TestKilledBackendIsOutOfServiceEverywhere(t *testing.T) {
	r := newFleetRig(t, 3, 12, 2)
	r.rounds(3)
	r.outcome = func(_, backend string) health.Result {
		if backend == "b03" {
			return failed
		}
		return ok
	}
	r.rounds(3) // failures: 3
	for _, name := range r.names {
		if got := r.served(name, "b03"); got != health.ServedUnhealthy {
			t.Errorf("b03 on %s is %v after three failed intervals, want unhealthy", name, got)
		}
		if got := r.served(name, "b04"); got != health.ServedHealthy {
			t.Errorf("b04 on %s is %v, want healthy", name, got)
		}
	}
	r.outcome = func(string, string) health.Result { return ok }
	r.rounds(2) // successes: 2
	for _, name := range r.names {
		if got := r.served(name, "b03"); got != health.ServedHealthy {
			t.Errorf("b03 on %s is %v after two ok intervals, want healthy", name, got)
		}
	}
}

// TestLoneDissenterEjectsNothingAndIsNamed: a replica whose path to every
// backend is broken says unhealthy about each it probes, while the other
// vantage point of each says healthy. No backend goes out of service on
// any replica, and after more than three intervals the broken replica is
// counted as a dissenter, once per backend, and shown.
func TestLoneDissenterEjectsNothingAndIsNamed(t *testing.T) {
	r := newFleetRig(t, 3, 12, 2)
	r.rounds(3)
	r.outcome = func(replica, _ string) health.Result {
		if replica == "r2" {
			return failed
		}
		return ok
	}
	r.rounds(3)
	mine := len(share(r.coords["r2"].members, "r2", r.backends, 2))
	for _, name := range r.names {
		for _, backend := range r.backends {
			if got := r.served(name, backend); got != health.ServedHealthy {
				t.Errorf("%s on %s is %v, want healthy: a lone dissenter ejects nothing", backend, name, got)
			}
		}
		if n := r.pools[name].Snapshot().Dissents["r2"]; n != 0 {
			t.Errorf("%s named r2 %d times when it just turned unhealthy, want none yet", name, n)
		}
	}
	// r2 says unhealthy from the third failed interval on, and is named
	// once it has disagreed for longer than three more.
	r.rounds(4)
	for _, name := range r.names {
		snap := r.pools[name].Snapshot()
		if n := snap.Dissents["r2"]; int(n) != mine {
			t.Errorf("%s named r2 a dissenter %d times, want once for each of its %d backends", name, n, mine)
		}
		dissenting := 0
		for _, b := range snap.Backends {
			for _, vp := range b.Fleet.VantagePoints {
				if vp.Dissenting {
					dissenting++
					if vp.Replica != "r2" {
						t.Errorf("%s on %s names %s dissenting, want r2 only", b.Name, name, vp.Replica)
					}
				}
			}
		}
		if dissenting != mine {
			t.Errorf("%s shows r2 dissenting on %d backends, want %d", name, dissenting, mine)
		}
	}
	r.rounds(3)
	if n := r.pools["r1"].Snapshot().Dissents["r2"]; int(n) != mine {
		t.Errorf("r2 counted %d times after more intervals, want %d: a dissent is counted once", n, mine)
	}
	// A dissenter that left the fleet is forgotten after a while, so
	// that the replicas a rollout replaced do not keep their series.
	r.live = []string{"r1", "r3"}
	r.rounds(int(forgetAfter / time.Second))
	if _, ok := r.pools["r1"].Snapshot().Dissents["r2"]; !ok {
		t.Errorf("r2 forgotten %v after it left, want remembered as long as that", forgetAfter)
	}
	r.rounds(2)
	if n, ok := r.pools["r1"].Snapshot().Dissents["r2"]; ok {
		t.Errorf("r2 still counted (%d) more than %v after it left", n, forgetAfter)
	}
}

// TestLocalFallbackWhenTheStoreIsLost: while the views cannot be read for
// longer than the view lease every replica probes every backend, and
// nothing in service goes out for it; once the store is back each
// replica probes its share again.
func TestLocalFallbackWhenTheStoreIsLost(t *testing.T) {
	r := newFleetRig(t, 3, 12, 2)
	r.rounds(3)
	r.fresh = false
	r.rounds(int(unsyncedLimit / time.Second))
	for _, backend := range r.backends {
		if by := r.probedBy(backend); len(by) != 2 {
			t.Errorf("%s is probed by %v within the view lease, want its two vantage points still", backend, by)
		}
	}
	r.rounds(2)
	for _, name := range r.names {
		if snap := r.pools[name].Snapshot(); snap.Probing != pool.ProbingLocal {
			t.Errorf("%s probing = %q after the store was out of reach for about a view lease, want local", name, snap.Probing)
		}
		for _, backend := range r.backends {
			s, _ := r.pools[name].SnapshotOf(backend)
			if !r.pools[name].ByName(backend).ProbedHere() || s.Served.State() != health.ServedHealthy {
				t.Errorf("%s on %s: probed here %v, served %v; want probed here and healthy", backend, name, r.pools[name].ByName(backend).ProbedHere(), s.Served.State())
			}
			if s.Fleet.Verdict() != "local" {
				t.Errorf("%s on %s: verdict %q in local mode, want local", backend, name, s.Fleet.Verdict())
			}
		}
	}
	r.fresh = true
	r.rounds(2)
	for _, backend := range r.backends {
		if by := r.probedBy(backend); len(by) != 2 {
			t.Errorf("%s is probed by %v back in shared mode, want two replicas", backend, by)
		}
	}
}

// TestLocalFallbackWithoutPeers: a replica alone probes every backend.
func TestLocalFallbackWithoutPeers(t *testing.T) {
	r := newFleetRig(t, 3, 6, 2)
	r.live = []string{"r1"}
	r.rounds(2)
	if snap := r.pools["r1"].Snapshot(); snap.Probing != pool.ProbingLocal {
		t.Errorf("probing = %q with no live peer, want local", snap.Probing)
	}
	if by := len(slices.DeleteFunc(slices.Clone(r.backends), func(b string) bool { return !r.pools["r1"].ByName(b).ProbedHere() })); by != 6 {
		t.Errorf("r1 alone probes %d of 6 backends, want all", by)
	}
}

// TestReassignmentKeepsTheLatch: a backend verified once whose probe path
// then refuses is unhealthy (the latch says refusals are failures). When
// one of its vantage points dies, the replica that takes it over starts
// from the published verdicts: it keeps the latch, and the backend stays
// out, rather than coming back as probe_unsupported.
func TestReassignmentKeepsTheLatch(t *testing.T) {
	r := newFleetRig(t, 3, 12, 2)
	r.rounds(3)
	r.outcome = func(string, string) health.Result { return refused }
	r.rounds(4)
	backend := ""
	for _, b := range r.backends {
		if vps := r.coords["r1"].members.Assign(nil, b, 2); slices.Contains(vps, "r1") && !slices.Contains(vps, "r3") {
			backend = b
			break
		}
	}
	if backend == "" {
		t.Fatal("no backend probed by r1 and not by r3 among 12")
	}
	for _, name := range r.names {
		if got := r.served(name, backend); got != health.ServedUnhealthy {
			t.Fatalf("%s on %s is %v, want unhealthy: verified, then refusing", backend, name, got)
		}
	}
	r.live = []string{"r2", "r3"}
	r.store.expire("r1")
	r.rounds(2)
	if by := r.probedBy(backend); !slices.Contains(by, "r3") {
		t.Fatalf("%s is probed by %v after r1 died, want r3 among them", backend, by)
	}
	for _, name := range r.live {
		s, _ := r.pools[name].SnapshotOf(backend)
		if s.Served.State() != health.ServedUnhealthy || !s.Health.Verified {
			t.Errorf("%s on %s after the reassignment: %v, verified %v; want unhealthy and verified", backend, name, s.Served.State(), s.Health.Verified)
		}
	}
}

// TestLocalFallbackWhenTheWatchIsLost: views still read, but verdicts no
// longer followed for longer than the view lease, is local probing too;
// a watch that works again brings shared probing back.
func TestLocalFallbackWhenTheWatchIsLost(t *testing.T) {
	r := newFleetRig(t, 3, 6, 2)
	r.rounds(3)
	r.store.silent = true
	for _, name := range r.names {
		r.coords[name].onUpdate(store.VerdictUpdate{Err: errors.New("watch cancelled")})
	}
	r.rounds(int(unsyncedLimit/time.Second) - 1)
	if snap := r.pools["r1"].Snapshot(); snap.Probing != pool.ProbingShared {
		t.Errorf("probing = %q within the view lease of losing the watch, want shared still", snap.Probing)
	}
	r.rounds(2)
	if snap := r.pools["r1"].Snapshot(); snap.Probing != pool.ProbingLocal {
		t.Errorf("probing = %q after the watch was lost for longer than the view lease, want local", snap.Probing)
	}
	r.store.silent = false
	for _, name := range r.names {
		r.coords[name].onUpdate(store.VerdictUpdate{Reset: true})
	}
	r.rounds(2)
	if snap := r.pools["r1"].Snapshot(); snap.Probing != pool.ProbingShared {
		t.Errorf("probing = %q once the watch works again, want shared", snap.Probing)
	}
}

// TestRegainedBackendIsPublishedAgain: a replica that loses a backend to
// a replica joining deletes its verdict a view lease later; when it gains
// the backend back, it publishes its verdict again, although the verdict
// did not change.
func TestRegainedBackendIsPublishedAgain(t *testing.T) {
	r := newFleetRig(t, 4, 24, 2)
	r.live = []string{"r1", "r2", "r3"}
	r.rounds(3)
	backend := ""
	for _, b := range r.backends {
		if slices.Contains(r.coords["r1"].members.Assign(nil, b, 2), "r1") &&
			!slices.Contains(fleetMembers("r1", "r2", "r3", "r4").Assign(nil, b, 2), "r1") {
			backend = b
			break
		}
	}
	if backend == "" {
		t.Fatal("no backend that r1 loses to r4 among 24")
	}
	key := r.coords["r1"].o.Store.VerdictKey("r1", backend)
	stored := func() bool {
		r.store.mu.Lock()
		defer r.store.mu.Unlock()
		_, ok := r.store.keys[key]
		return ok
	}
	if !stored() {
		t.Fatalf("r1's verdict of %s is not stored", backend)
	}
	r.live = []string{"r1", "r2", "r3", "r4"}
	r.rounds(12)
	if stored() {
		t.Fatalf("r1's verdict of %s is still stored a view lease after r4 took the backend", backend)
	}
	r.live = []string{"r1", "r2", "r3"}
	r.store.expire("r4")
	r.rounds(2)
	if !stored() {
		t.Errorf("r1's verdict of %s is not stored after it regained the backend", backend)
	}
}

func fleetMembers(names ...string) fleet.Members { return fleet.NewMembers(names) }

// TestEndedLeaseHasTheViewsReadAtOnce: a replica whose verdicts are all
// deleted together, as etcd deletes a lease's keys when it ends, has the
// views read at once, so that its share moves without waiting for the
// next read; a replica deleting one verdict of several does not.
func TestEndedLeaseHasTheViewsReadAtOnce(t *testing.T) {
	r := newFleetRig(t, 3, 12, 2)
	reads := 0
	r.coords["r1"].o.ReadMembersSoon = func() { reads++ }
	r.rounds(3)
	some := share(r.coords["r1"].members, "r2", r.backends, 2)
	r.store.of("r2").PublishVerdicts(context.Background(), []fleet.Op{{Key: r.coords["r2"].o.Store.VerdictKey("r2", some[0]), Delete: true}})
	if reads != 0 {
		t.Errorf("one verdict of r2 deleted: the views were read %d times at once, want none", reads)
	}
	r.store.expire("r2")
	if reads != 1 {
		t.Errorf("r2's lease ended: the views were read %d times at once, want once", reads)
	}
}

// share is the backends whose k vantage points include replica.
func share(m fleet.Members, replica string, backends []string, k int) []string {
	var mine []string
	for _, b := range backends {
		if slices.Contains(m.Assign(nil, b, k), replica) {
			mine = append(mine, b)
		}
	}
	return mine
}

package vantage

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/collector/fleet"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/internal/testconfig"
)

// regrant is etcd's Publish after the lease of the view was lost: a new
// lease for the view, and the keys under the old one end with it. The
// view stays live throughout.
func (s *fakeStore) regrant(replica string) {
	s.expire(replica)
	s.of(replica)
}

func (s *fakeStore) count(replica string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for key := range s.keys {
		if strings.HasPrefix(key, fakePrefix+replica+"/") {
			n++
		}
	}
	return n
}

func TestNewViewLeaseIsPublishedAgain(t *testing.T) {
	r := newFleetRig(t, 3, 12, 2)
	r.rounds(3)
	before := r.store.count("r1")
	if before == 0 {
		t.Fatal("r1 published nothing")
	}
	r.store.regrant("r1")
	r.rounds(30)
	after := r.store.count("r1")
	t.Logf("r1's verdicts: %d before the new lease, %d 30 s after", before, after)
	if after != before {
		t.Errorf("r1's verdicts were not written again under its new lease")
	}
	local := 0
	for _, name := range []string{"r2", "r3"} {
		for _, b := range r.backends {
			s, _ := r.pools[name].SnapshotOf(b)
			if s.Fleet.Verdict() == "local" {
				local++
			}
		}
	}
	t.Logf("backends judged locally on r2+r3 afterwards: %d", local)
}

// A lone dissenter (r2, cut from every backend) and a vantage point that
// leaves: the replica taking its place is not seeded out of service from
// the dissenter's word alone, and the backend stays in everywhere.
func TestLoneDissenterEjectsNothingWhileItsPartnerIsReplaced(t *testing.T) {
	r := newFleetRig(t, 4, 24, 2)
	r.outcome = func(replica, _ string) health.Result {
		if replica == "r2" {
			return failed
		}
		return ok
	}
	r.rounds(6)
	for _, name := range r.names {
		for _, b := range r.backends {
			if got := r.served(name, b); got != health.ServedHealthy {
				t.Fatalf("%s on %s %v before anything left", b, name, got)
			}
		}
	}
	// the other vantage point of some r2 backend leaves (rolling restart:
	// Withdraw revokes its lease, its view goes with it)
	victim, backend := "", ""
	for _, b := range r.backends {
		vps := r.coords["r1"].members.Assign(nil, b, 2)
		if slices.Contains(vps, "r2") && !slices.Contains(vps, "r1") {
			victim = vps[0]
			if victim == "r2" {
				victim = vps[1]
			}
			backend = b
			break
		}
	}
	t.Logf("backend %s, vantage points r2 (cut) and %s (leaves)", backend, victim)
	r.live = slices.DeleteFunc(slices.Clone(r.live), func(n string) bool { return n == victim })
	r.store.expire(victim)
	worst := 0
	for i := range 8 {
		r.round()
		out := []string{}
		for _, name := range r.live {
			if got := r.served(name, backend); !got.InService() {
				out = append(out, name)
			}
		}
		if len(out) > 0 {
			t.Logf("interval %d after: %s out of service on %v", i+1, backend, out)
		}
		worst = max(worst, len(out))
	}
	if worst > 0 {
		t.Errorf("%s (healthy; only r2 says unhealthy) went out of service on up to %d replicas", backend, worst)
	}
}

// A replica alone (local mode, no peer) keeps no verdict up that it no
// longer maintains: a replica joining would be seeded from it.
func TestLocalModeWithdrawsTheVerdicts(t *testing.T) {
	r := newFleetRig(t, 3, 6, 2)
	r.live = []string{"r1", "r2"}
	r.rounds(3)
	r.live = []string{"r1"}
	r.store.expire("r2")
	r.outcome = func(_, backend string) health.Result {
		if backend == "b00" {
			return failed
		}
		return ok
	}
	r.rounds(5)
	if got := r.served("r1", "b00"); got.InService() {
		t.Fatalf("b00 on r1 (local) %v, want unhealthy", got)
	}
	r.store.mu.Lock()
	v, err := fleet.Decode(r.store.keys[r.coords["r1"].o.Store.VerdictKey("r1", "b00")])
	r.store.mu.Unlock()
	t.Logf("r1's stored verdict of b00 while local and judging it unhealthy: %+v %v", v.State, err)
	if err == nil && v.State != health.StateUnhealthy {
		t.Errorf("r1 (local, no peer) leaves %v published for a backend it judges unhealthy", v.State)
	}
}

// A vantage point that restarts comes back from local probing, with a
// fresh machine that has not seen the probe path tell health apart: it
// starts from the published verdicts, latch included, so that a verified
// backend whose probe path refuses stays out.
func TestRestartedVantagePointKeepsTheLatch(t *testing.T) {
	r := newFleetRig(t, 3, 12, 2)
	r.rounds(3)
	r.outcome = func(string, string) health.Result { return refused }
	r.rounds(4)
	backend := ""
	for _, b := range r.backends {
		if vps := r.coords["r1"].members.Assign(nil, b, 2); slices.Contains(vps, "r1") {
			backend = b
			break
		}
	}
	for _, name := range r.names {
		if got := r.served(name, backend); got != health.ServedUnhealthy {
			t.Fatalf("%s on %s is %v, want unhealthy", backend, name, got)
		}
	}
	// r1 restarts: Withdraw, then a fresh process under the same name.
	r.store.expire("r1")
	r.live = []string{"r2", "r3"}
	r.round()
	p := pool.New(nil, func() time.Time { return r.now })
	targets := make([]pool.Target, len(r.backends))
	for i, name := range r.backends {
		targets[i] = pool.Target{Name: name, URL: fmt.Sprintf("http://127.0.0.1:%d", 19001+i), Probe: testconfig.Probe(), ClientConfig: commoncfg.DefaultHTTPClientConfig}
	}
	if err := p.Apply(targets, pool.Settings{}); err != nil {
		t.Fatal(err)
	}
	c := New(Options{Pool: p, Self: "r1", VantagePoints: 2, Store: r.store.of("r1"), Members: r.members, Resync: func() {}, Now: func() time.Time { return r.now }})
	c.attach()
	c.o.Store.WatchVerdicts(context.Background(), c.onUpdate)
	r.pools["r1"], r.coords["r1"] = p, c
	r.live = []string{"r1", "r2", "r3"}
	for i := range 6 {
		r.round()
		var states []string
		for _, name := range r.live {
			states = append(states, name+"="+r.served(name, backend).String())
		}
		own, _ := p.ByName(backend).OwnVerdict()
		t.Logf("interval %d after the restart: %s served %v; r1 own %v verified=%v", i+1, backend, states, own.State, own.Verified)
	}
	for _, name := range r.live {
		if got := r.served(name, backend); got != health.ServedUnhealthy {
			t.Errorf("%s on %s is %v after r1 restarted, want unhealthy (verified, refusing)", backend, name, got)
		}
	}
}

// TestNewViewLeaseWithALoneDissenterEjectsNothing: a replica's view moves
// to a new lease (its verdicts under the old one end), while another
// vantage point of the same backends is cut from them: the backends stay
// in service everywhere, and the replica's verdicts are live again.
func TestNewViewLeaseWithALoneDissenterEjectsNothing(t *testing.T) {
	r := newFleetRig(t, 3, 12, 2)
	r.outcome = func(replica, _ string) health.Result {
		if replica == "r2" {
			return failed
		}
		return ok
	}
	r.rounds(6)
	r.store.regrant("r1")
	r.rounds(10)
	for _, b := range r.backends {
		vps := r.coords["r3"].members.Assign(nil, b, 2)
		if slices.Contains(vps, "r1") && slices.Contains(vps, "r2") {
			for _, name := range r.names {
				if got := r.served(name, b); !got.InService() {
					t.Errorf("%s (vantage points r1, and r2 cut from it) on %s: %v, want in service", b, name, got)
				}
			}
			// Both vantage points speak again: r1's verdict, written
			// anew under its new lease, is live beside r2's.
			s, _ := r.pools["r3"].SnapshotOf(b)
			for _, vp := range s.Fleet.VantagePoints {
				if !vp.Live {
					t.Errorf("%s on r3: vantage point %s has no live verdict after r1's new lease", b, vp.Replica)
				}
			}
		}
	}
}

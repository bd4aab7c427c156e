package pool

import (
	"testing"
	"time"

	"github.com/probegate/probegate/collector/fleet"
	"github.com/probegate/probegate/collector/health"
)

var (
	healthyPeer  = fleet.Verdict{State: health.StateHealthy, Verified: true, Reachable: true, Probed: true, Class: health.ClassOK}
	fleetEpoch   = time.Unix(1_700_000_000, 0)
	twoVantages  = []string{"r2", "r3"}
	healthyPeers = []fleet.Vantage{{Replica: "r2", Verdict: healthyPeer}, {Replica: "r3", Verdict: healthyPeer}}
)

// TestPassiveEjectionOfAWatchedBackendIsThisReplicasOwn: a backend this
// replica serves by its vantage points' verdicts is ejected by its own
// traffic all the same, stays ejected while the verdicts say healthy, and
// is readmitted by the elapsed window, since no probe of this replica's
// can readmit it.
func TestPassiveEjectionOfAWatchedBackendIsThisReplicasOwn(t *testing.T) {
	p := newPool(t, namedTargets("b0"), Settings{})
	b := p.ByName("b0")
	// Probed here before shared probing began: verified here too.
	feed(b, okResult, 2)
	b.SetFleet(Fleet{Role: RoleWatcher, Self: "r1", VantagePoints: twoVantages, Peers: healthyPeers}, fleetEpoch)
	if got := b.Served().State(); got != health.ServedHealthy {
		t.Fatalf("watched backend served %v, want healthy from its vantage points", got)
	}
	if b.ProbedHere() {
		t.Error("a watched backend is probed here")
	}
	if _, _, ejected := b.ejectPassively(fleetEpoch, time.Second); !ejected {
		t.Fatal("passive health could not eject a watched backend")
	}
	b.SetFleet(Fleet{Role: RoleWatcher, Self: "r1", VantagePoints: twoVantages, Peers: healthyPeers}, fleetEpoch.Add(time.Millisecond))
	if got := b.Served().State(); got.InService() {
		t.Fatalf("ejected watched backend served %v after the verdicts came again, want out of service", got)
	}
	if readmitted, _, _ := b.readmitElapsed(fleetEpoch.Add(time.Second), time.Second); !readmitted {
		t.Fatal("the elapsed window did not readmit a watched backend")
	}
	if got := b.Served().State(); got != health.ServedHealthy {
		t.Errorf("readmitted watched backend served %v, want healthy", got)
	}
}

// TestVantagePointPublishesItsProbesNotItsTraffic: a vantage point that
// ejects a backend for its own traffic still publishes what its probes
// say, so that its traffic ejects the backend nowhere else.
func TestVantagePointPublishesItsProbesNotItsTraffic(t *testing.T) {
	p := newPool(t, namedTargets("b0"), Settings{})
	b := p.ByName("b0")
	b.SetFleet(Fleet{Role: RoleVantage, Self: "r2", VantagePoints: twoVantages, Peers: healthyPeers[1:]}, fleetEpoch)
	feed(b, okResult, 2)
	if _, _, ejected := b.ejectPassively(fleetEpoch, time.Second); !ejected {
		t.Fatal("passive health could not eject the backend")
	}
	if got := b.Served().State(); got.InService() {
		t.Errorf("ejected backend served %v here, want out of service", got)
	}
	v, ok := b.OwnVerdict()
	if !ok || v.State != health.StateHealthy {
		t.Errorf("own verdict %+v (vantage point %v), want healthy: passive health is not published", v, ok)
	}
}

// TestFallingBackChangesNothingByItself: a backend served healthy by its
// vantage points, whose own probes here failed, stays in service when the
// replica falls back to local probing, and goes out only after failures
// more of its own probes.
func TestFallingBackChangesNothingByItself(t *testing.T) {
	p := newPool(t, namedTargets("b0"), Settings{})
	b := p.ByName("b0")
	b.SetFleet(Fleet{Role: RoleVantage, Self: "r2", VantagePoints: twoVantages, Peers: healthyPeers[1:]}, fleetEpoch)
	failed := health.Result{Class: health.ClassFailed, Reason: health.ReasonTimeout}
	feed(b, okResult, 1)
	feed(b, failed, 5)
	if got := b.Served().State(); got != health.ServedHealthy {
		t.Fatalf("served %v with one vantage point of two failing, want healthy", got)
	}
	b.SetFleet(Fleet{Role: RoleLocal}, fleetEpoch.Add(time.Second))
	if got := b.Served().State(); got != health.ServedHealthy {
		t.Fatalf("served %v right after falling back, want healthy as before", got)
	}
	feed(b, failed, defaultProbe.Failures)
	if got := b.Served().State(); got != health.ServedUnhealthy {
		t.Errorf("served %v after %d own failures in local mode, want unhealthy", got, defaultProbe.Failures)
	}
}

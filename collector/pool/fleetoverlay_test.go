package pool

import (
	"testing"
	"time"

	"github.com/probegate/probegate/collector/fleet"
	"github.com/probegate/probegate/collector/health"
)

// A passive ejection made while local stays out of the published verdict
// when the replica becomes a vantage point again.
func TestPassiveEjectionStaysOutOfTheOwnVerdict(t *testing.T) {
	p := newPool(t, namedTargets("b0"), Settings{})
	b := p.ByName("b0")
	// shared, vantage point, healthy
	b.SetFleet(Fleet{Role: RoleVantage, Self: "r2", VantagePoints: twoVantages, Peers: healthyPeers[1:]}, fleetEpoch)
	feed(b, okResult, 2)
	if _, _, ejected := b.ejectPassively(fleetEpoch, time.Second); !ejected {
		t.Fatal("no ejection")
	}
	// store blip: local mode
	b.SetFleet(Fleet{Role: RoleLocal, Self: "r2"}, fleetEpoch.Add(time.Second))
	// back to shared, vantage point again; probes all ok meanwhile? none yet.
	b.SetFleet(Fleet{Role: RoleVantage, Self: "r2", VantagePoints: twoVantages, Peers: healthyPeers[1:]}, fleetEpoch.Add(2*time.Second))
	v, _ := b.OwnVerdict()
	t.Logf("own verdict after local->vantage with a passive ejection: %+v", v)
	if v.State == health.StateUnhealthy {
		t.Errorf("own (published) verdict is unhealthy though every probe was ok: passive ejection leaked")
	}
	// and both vantage points ejecting passively -> out of service everywhere
	peerUnhealthy := []fleet.Vantage{{Replica: "r3", Verdict: fleet.Verdict{State: health.StateUnhealthy, Verified: true, Reachable: true, Probed: true, Class: health.ClassOK}}}
	_ = peerUnhealthy
}

// Passively ejected while a vantage point (readmission by probes), then
// reassigned away (watcher): the elapsed window readmits it.
func TestEjectedBackendWatchedAfterwardsIsReadmitted(t *testing.T) {
	p := newPool(t, namedTargets("b0", "b1"), Settings{})
	b := p.ByName("b0")
	b.SetFleet(Fleet{Role: RoleVantage, Self: "r2", VantagePoints: twoVantages, Peers: healthyPeers[1:]}, fleetEpoch)
	feed(b, okResult, 2)
	if !b.probesReadmit() {
		t.Fatal("expected readmission by probes for a verified vantage point")
	}
	if _, _, ejected := b.ejectPassively(fleetEpoch, time.Second); !ejected {
		t.Fatal("no ejection")
	}
	// reassigned: watcher now, no probes here any more
	b.SetFleet(Fleet{Role: RoleWatcher, Self: "r2", VantagePoints: []string{"r3", "r4"}, Peers: []fleet.Vantage{{Replica: "r3", Verdict: healthyPeer}}}, fleetEpoch.Add(time.Second))
	// the pool's readmission scan only runs once readmitDue is reached
	p.readmitElapsed(fleetEpoch.Add(time.Hour))
	if got := b.Served().State(); !got.InService() {
		t.Errorf("an hour later the backend is still %v on this replica: readmitDue was never set for it", got)
	}
}

func TestRecordProbeUnderSharedProbingAllocatesNothing(t *testing.T) {
	p := newPool(t, namedTargets("b0"), Settings{})
	b := p.ByName("b0")
	b.SetFleet(Fleet{Role: RoleVantage, Self: "r2", VantagePoints: twoVantages, Peers: healthyPeers[1:]}, fleetEpoch)
	feed(b, okResult, 5)
	n := testing.AllocsPerRun(1000, func() { b.RecordProbe(okResult) })
	t.Logf("vantage RecordProbe allocs: %v", n)
	if n != 0 {
		t.Errorf("RecordProbe allocates %v per call in a steady state", n)
	}
	b.SetFleet(Fleet{Role: RoleLocal, Self: "r2"}, fleetEpoch)
	n = testing.AllocsPerRun(1000, func() { b.RecordProbe(okResult) })
	t.Logf("local RecordProbe allocs: %v", n)
}

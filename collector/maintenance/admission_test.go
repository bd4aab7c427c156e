package maintenance

import (
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"
)

// TestAdmittedEntryHoldsTheFloorAgainstEjections: a maintenance request
// admitted on the last disruption, whose entry is still on its way
// through the store, counts against passive health's floor: failing
// traffic meanwhile does not eject a second backend, and after the grant
// the pool has desired_healthy backends in service, not one fewer.
func TestAdmittedEntryHoldsTheFloorAgainstEjections(t *testing.T) {
	names := backendNames(4)
	p := pool.New(nil, nil)
	settings := pool.Settings{
		Readiness: config.Readiness{MinAvailable: &config.IntOrPercent{Value: len(names) - 1}},
		Passive:   config.PassiveHealth{Enabled: true, Window: model.Duration(time.Minute), MaxFailures: 3, MaxEjectedPercent: 50},
	}
	if err := p.Apply(probedTargets(names), settings); err != nil {
		t.Fatal(err)
	}
	for _, b := range p.Backends() {
		b.RecordProbe(health.StatusResult(200))
		b.RecordProbe(health.StatusResult(200))
	}
	ms := newMemStore("etcd", true)
	m, _ := startManager(t, p, ms, nil)

	// The request's write waits in the store until the failing traffic
	// was judged.
	inStore, judged := make(chan struct{}), make(chan struct{})
	ms.set(func(s *memStore) {
		s.beforeSwap = func() {
			close(inStore)
			<-judged
		}
	})
	granted := make(chan error, 1)
	go func() {
		_, err := m.enter(t.Context(), entries.Entry{Backend: names[0], Reason: "kernel", By: "127.0.0.1"}, 0, false)
		granted <- err
	}()
	select {
	case <-inStore:
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached the store")
	}
	victim := p.Backends()[1]
	for range 3 {
		p.RecordRound([]pool.RoundSample{{Backend: victim, Outcome: traffic.Outcome{Erred: true, Reason: traffic.HTTP5xx, Failed: true}}})
	}
	ejected := victim.Served().Ejected()
	close(judged)
	if err := <-granted; err != nil {
		t.Fatalf("enter: %v", err)
	}
	if ejected {
		t.Errorf("%s was ejected while %s's admitted entry was being stored: both spent the last disruption", names[1], names[0])
	}
	if b := p.Budget(); b.CurrentHealthy < b.DesiredHealthy {
		t.Errorf("budget after the grant %+v: fewer in service than desired", b)
	}
	if got := victim.Served().State(); got != health.ServedHealthy {
		t.Errorf("%s is %s, want healthy", names[1], got)
	}
}

package pool

import (
	"testing"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
)

// TestServedNamesTheEjectionsCause: a backend ejected for failing real
// traffic and one ejected as an outlier are both out of service, each
// with its cause in the overlay, shown by the words they always had
// (unhealthy and ejected). The machine's own state is told apart: the
// outlier's probes still say healthy. Maintenance hides either.
func TestServedNamesTheEjectionsCause(t *testing.T) {
	passive, _ := newClockedPool(t, nil, unprobedTargets(4), passiveSettings())
	b := passive.Backends()[0]
	failTraffic(passive, b, 3)
	if got := b.Served(); got.Overlay != health.OverlayPassiveEjection || got.State() != health.ServedUnhealthy || got.InService() {
		t.Errorf("passive ejection served as %+v (%v)", got, got.State())
	}
	want := health.Served{Machine: health.StateUnhealthy, Overlay: health.OverlayPassiveEjection}
	if got := b.Snapshot().Served; got != want {
		t.Errorf("snapshot serves %+v; want %+v", got, want)
	}

	p, clock, _ := detectingPool(t, 3, true, nil, true)
	b1 := p.Backends()[1]
	withVerdicts(p, 3)
	rounds(p, clock, 5, map[int]bool{1: true}, nil)
	got := b1.Served()
	if got.Overlay != health.OverlayOutlierEjection || got.State() != health.ServedEjected || got.InService() {
		t.Errorf("outlier ejection served as %+v (%v)", got, got.State())
	}
	if h := b1.Health(); h.State != health.StateHealthy || !h.InService() {
		t.Errorf("the machine under the outlier ejection is %v, in service %v; want healthy, in service", h.State, h.InService())
	}
	if s := p.Snapshot(); s.InService != 2 || s.Backends[1].Served != got {
		t.Errorf("snapshot: %d in service, b1 served %+v; want 2 and %+v", s.InService, s.Backends[1].Served, got)
	}
	p.SetMaintenance([]entries.Entry{{Backend: "b1"}}, entries.KeptByClock)
	if got := b1.Served(); got.Overlay != health.OverlayMaintenance || got.State() != health.ServedMaintenance {
		t.Errorf("maintenance over an outlier ejection served as %+v (%v)", got, got.State())
	}
}

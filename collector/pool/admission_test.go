package pool

import (
	"errors"
	"testing"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/config"
)

// TestAdmittedMaintenanceHoldsTheOutlierFloor: a maintenance request
// admitted on the last disruption holds its backend out of outlier
// detection's count until it is released, so a failing backend is not
// ejected meanwhile; once released without an entry, the disruption is
// free again and the outlier is ejected.
func TestAdmittedMaintenanceHoldsTheOutlierFloor(t *testing.T) {
	p, clock, _ := detectingPool(t, 3, true, &config.IntOrPercent{Value: 2}, false)
	a, release, err := p.AdmitMaintenance(nil, "b0")
	if err != nil || !a.InService || a.Budget.DisruptionsAllowed != 1 {
		t.Fatalf("AdmitMaintenance = %+v, %v; want b0 in service and one disruption allowed", a, err)
	}
	outlier := p.Backends()[1]
	rounds(p, clock, 5, map[int]bool{1: true}, nil)
	if got := outlier.Served().State(); got == health.ServedEjected {
		t.Fatalf("b1 ejected while b0's admitted request held the last disruption")
	}
	release()
	release() // a second call changes nothing
	rounds(p, clock, 5, map[int]bool{1: true}, nil)
	if got := outlier.Served().State(); got != health.ServedEjected {
		t.Errorf("b1 is %s after the request was released, want ejected", got)
	}
	if _, _, err := p.AdmitMaintenance(nil, "nobody"); !errors.Is(err, ErrUnknownBackend) {
		t.Errorf("AdmitMaintenance of an unknown backend: %v, want ErrUnknownBackend", err)
	}
}

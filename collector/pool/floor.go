package pool

import (
	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/config"
)

// floorAllows is the one floor check of every ejector, passive health's
// and outlier detection's: the readiness budget over expected backends
// of which inService are in service now, and whether one more may leave.
// An ejector calls it under judgeMu, between counting the backends in
// service and ejecting, so that two ejections cannot spend the same
// disruption.
func floorAllows(readiness config.Readiness, expected, inService int) (budget.Budget, bool) {
	b := budget.Compute(readiness, expected, inService)
	return b, b.AllowsDisruption()
}

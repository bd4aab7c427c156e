package pool

import (
	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/config"
)

// floor is what an ejection is held to: the readiness budget of the pool
// and that of the ejected backend's replica group (readiness.per_group),
// each counted with the backend still in service.
type floor struct {
	pool  budget.Budget
	group budget.Group
}

// floorAllows is the one floor check of every ejector, passive health's
// and outlier detection's: the readiness budget over expected backends
// of which inService are in service now, the budget of the ejected
// backend's group (group), and whether one more may leave both. An
// ejector calls it under judgeMu, between counting the backends in
// service and ejecting, so that two ejections cannot spend the same
// disruption.
func floorAllows(readiness config.Readiness, expected, inService int, group groupCount) (floor, bool) {
	f := floor{pool: budget.Compute(readiness, expected, inService), group: group.budget(readiness.PerGroup)}
	return f, f.pool.AllowsDisruption() && f.group.AllowsDisruption()
}

// refusal says, for the log line of a suppressed ejection, which budget
// allowed no disruption, and its numbers.
func (f floor) refusal() (budgetName string, keyvals []any) {
	if !f.pool.AllowsDisruption() {
		return "the readiness budget", []any{"in_service", f.pool.CurrentHealthy, "desired_healthy", f.pool.DesiredHealthy}
	}
	return "the budget of its replica group", []any{"group", f.group.Name, "group_in_service", f.group.CurrentHealthy,
		"group_desired_healthy", f.group.DesiredHealthy}
}

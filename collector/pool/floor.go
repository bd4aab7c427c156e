package pool

import (
	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/config"
)

// Every judgement of a disruption, a maintenance request
// (AdmitMaintenance) as much as a passive or an outlier ejection, is held
// to one floor: the readiness budget of the pool and that of the
// disrupted backend's replica group, counted by one headcount. The
// headcount counts verdicts only: a probed backend still unknown is not
// available there, whatever routing does with it. On a replica that has
// just started, a dead backend is unknown until its probes fail; had it
// counted, an ejection judged meanwhile would spend the disruption its
// death is about to take, and leave the pool below its budget once it
// does. A backend that is not probed never gets a verdict and counts as
// configured, as it does for routing.

// headcount is the pool counted for a judgement of a disruption: its
// backends, in their order, which of them are available, how many are,
// and the readiness settings their budgets are computed by.
type headcount struct {
	readiness config.Readiness
	backends  []*Backend
	// available tells, by the index of each backend, whether it counts
	// as in service toward the floor.
	available []bool
	count     int
}

// headcountLocked counts the pool, every backend held reports counted
// out of service (an entry in force, an admitted request), into the
// slice scratch (reused, so that a round judged on every fan-out request
// allocates nothing). seen, when set, is told each backend by its index
// with what it is served as bar maintenance. The caller holds mu.
func (p *Pool) headcountLocked(held func(*Backend) bool, scratch []bool, seen func(i int, b *Backend, s health.Served)) headcount {
	h := headcount{readiness: p.settings.Readiness, backends: p.backends, available: scratch[:0]}
	h.count = p.budgetLocked(held, true, func(i int, b *Backend, available bool, s health.Served) {
		h.available = append(h.available, available)
		if seen != nil {
			seen(i, b, s)
		}
	}).CurrentHealthy
	return h
}

// budget is the readiness budget of the pool by the headcount.
func (h *headcount) budget() budget.Budget {
	return budget.Compute(h.readiness, len(h.backends), h.count)
}

// group is the budget of the replica group of the backend at index i by
// the headcount, with that backend counted as available when withIt; it
// has none while readiness.per_group is unset.
func (h *headcount) group(i int, withIt bool) budget.Group {
	c := groupCount{name: h.backends[i].Group()}
	for j, b := range h.backends {
		if b.Group() == c.name {
			c.add(h.available[j] || withIt && j == i)
		}
	}
	return c.budget(h.readiness.PerGroup)
}

// floor is the floor a disruption of the backend at index i is held to,
// and whether it allows one more: both the pool's budget and that of
// the backend's group must, each counted with the backend still in
// service. A backend without a verdict is not available in the count,
// yet routing serves it: its ejection leaves the count as it is, and is
// allowed while the count holds the budget. A dead backend that is still
// unknown can thus be ejected for what its traffic shows, while no
// ejection of a healthy one may spend the disruption its death is about
// to take. An ejector calls it under judgeMu, between counting and
// ejecting, so that two ejections cannot spend the same disruption.
func (h *headcount) floor(i int) (floor, bool) {
	count := h.count
	if !h.available[i] {
		count++
	}
	f := floor{pool: budget.Compute(h.readiness, len(h.backends), count), group: h.group(i, true)}
	return f, f.pool.AllowsDisruption() && f.group.AllowsDisruption()
}

// remove counts the backend at index i out, once it has been ejected,
// for the judgements that follow in the same pass.
func (h *headcount) remove(i int) {
	if h.available[i] {
		h.available[i] = false
		h.count--
	}
}

// floor is what a disruption is held to: the readiness budget of the
// pool and that of the disrupted backend's replica group
// (readiness.per_group), each counted with the backend still in service.
type floor struct {
	pool  budget.Budget
	group budget.Group
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

package pool

import (
	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/config"
)

// A replica group is a property of its backends, not a second pool:
// backends holding the same data share a group name, and a backend
// without one is a group of its own, named after it, so that a pool
// without groups counts exactly as it did before groups existed. The
// groups are listed in configuration order of their first member. Each
// group of two or more replicas has a budget of its own when
// readiness.per_group is set: /ready, maintenance admission and the
// ejectors' floor hold it, each counting in service as it counts for the
// pool's budget.

// Group is the backend's replica group: its group, or its own name when
// it has none. It is fixed for the backend's life: a reload that moves a
// backend to another group builds it afresh, keeping its state.
func (b *Backend) Group() string { return config.GroupOf(b.Name, b.group) }

// Grouped reports whether the backend was given a group, rather than
// being a group of its own.
func (b *Backend) Grouped() bool { return b.group != "" }

// groupedLocked reports whether some backend of the pool was given a
// group: only then are the groups shown. The caller holds mu.
func (p *Pool) groupedLocked() bool {
	for _, b := range p.backends {
		if b.Grouped() {
			return true
		}
	}
	return false
}

// groupBudgets counts every replica group of backends, in configuration
// order of its first member, with in(i) telling whether backends[i] is in
// service, and gives each its budget by per. A group of one replica, or
// any group while per is unset, has none (budget.Group.Budgeted).
func groupBudgets(backends []*Backend, per config.GroupBudget, in func(i int) bool) []budget.Group {
	names, of := groupOrder(backends)
	counts := make([]groupCount, len(names))
	for j, name := range names {
		counts[j].name = name
	}
	for i := range backends {
		counts[of[i]].add(in(i))
	}
	groups := make([]budget.Group, len(counts))
	for j, c := range counts {
		groups[j] = c.budget(per)
	}
	return groups
}

// groupOrder numbers the replica groups of backends in configuration
// order of their first member: names[j] is group j's name, and of[i] the
// number of backends[i]'s group.
func groupOrder(backends []*Backend) (names []string, of []int) {
	index := make(map[string]int, len(backends))
	of = make([]int, len(backends))
	for i, b := range backends {
		name := b.Group()
		j, ok := index[name]
		if !ok {
			j = len(names)
			index[name] = j
			names = append(names, name)
		}
		of[i] = j
	}
	return names, of
}

// groupCount counts one replica group: its replicas and how many of them
// are in service.
type groupCount struct {
	name                string
	replicas, inService int
}

// add counts one replica of the group.
func (c *groupCount) add(inService bool) {
	c.replicas++
	if inService {
		c.inService++
	}
}

// budget is the group's budget by per.
func (c groupCount) budget(per config.GroupBudget) budget.Group {
	return budget.ComputeGroup(per, c.name, c.replicas, c.inService)
}

// GroupBudgets are the budgets of the pool's replica groups now, counted
// as the readiness budget counts (Budget): what /ready's group_budget
// check judges. It is nil while readiness.per_group is unset.
func (p *Pool) GroupBudgets() []budget.Group {
	p.catchUp(p.now())
	p.mu.RLock()
	defer p.mu.RUnlock()
	per := p.settings.Readiness.PerGroup
	if !per.Set() {
		return nil
	}
	// budgetLocked tells the backends in their order.
	in := make([]bool, 0, len(p.backends))
	p.budgetLocked(p.inMaintenanceLocked, false, func(_ int, _ *Backend, inService bool, _ health.Served) { in = append(in, inService) })
	return groupBudgets(p.backends, per, func(i int) bool { return in[i] })
}

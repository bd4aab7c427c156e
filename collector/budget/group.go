package budget

import "github.com/probegate/probegate/config"

// MinGroupReplicas is the size from which a replica group has a budget of
// its own: a group of one backend is that backend, which the pool's
// budget already counts.
const MinGroupReplicas = 2

// Group is the budget of one replica group at one moment, by
// readiness.per_group, with the pool's arithmetic over its replicas.
type Group struct {
	// Name is the group's: its backends' shared group, or the name of a
	// backend that has none.
	Name string `json:"name"`
	Budget
	// Budgeted says whether the group has a budget: readiness.per_group
	// is set and the group has at least MinGroupReplicas replicas.
	// Without one it always holds and allows every disruption.
	Budgeted bool `json:"budgeted"`
}

// ComputeGroup applies readiness.per_group to a group of replicas
// backends of which inService are in service.
func ComputeGroup(g config.GroupBudget, name string, replicas, inService int) Group {
	if !g.Set() || replicas < MinGroupReplicas {
		return Group{Name: name, Budget: Budget{Expected: replicas, CurrentHealthy: inService, DisruptionsAllowed: inService}}
	}
	return Group{Name: name, Budget: of(g.MinAvailable, g.MaxUnavailable, replicas, inService), Budgeted: true}
}

// Holds reports whether enough replicas of the group are in service; a
// group without a budget always holds.
func (g Group) Holds() bool { return !g.Budgeted || g.Budget.Holds() }

// AllowsDisruption reports whether one more replica of the group may
// leave service with its budget still holding; a group without a budget
// allows every disruption.
func (g Group) AllowsDisruption() bool { return !g.Budgeted || g.Budget.AllowsDisruption() }

package readiness

import (
	"github.com/prometheus/common/version"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/maintenance"
	"github.com/probegate/probegate/collector/pool"
)

// selfView is this replica's view for its peers: its name and listeners,
// what its /ready answers (ready, draining), its own budget b and whether
// its replica groups hold theirs. A budget counted over backends without
// a verdict, or over a pool discovery has not delivered yet (awaited), is
// not known to hold, and is published as not holding, the pool's and the
// groups' alike: published as holding, it would turn peer-relative peers
// whose budget fails unready, for a pool this replica has not judged (a
// dead backend it still counts as unknown).
func selfView(name string, listeners *maintenance.ReplicaListeners, b budget.Budget, groups []budget.Group, awaited pool.Awaited, ready, draining bool) maintenance.ReplicaView {
	judged := awaited.None()
	return maintenance.ReplicaView{Name: name, Version: version.Version, Ready: ready, BudgetHolds: b.Holds() && judged,
		GroupsHold: groupsHold(groups) && judged,
		Draining:   draining, Expected: b.Expected, InService: b.CurrentHealthy, DisruptionsAllowed: b.DisruptionsAllowed,
		Listeners: listeners}
}

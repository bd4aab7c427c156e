package status

import (
	"slices"

	"github.com/probegate/probegate/collector/budget"
)

// maxGroupRows bounds the replica groups the page shows: as its backends,
// a hundred rows, those needing a person first.
const maxGroupRows = 100

// groupsView is the page's table of replica groups.
type groupsView struct {
	Rows []groupRow
	// Total is how many groups the pool has, More how many the page
	// leaves out.
	Total, More int
}

// groupRow is one replica group: its replicas, those in service, and its
// budget.
type groupRow struct {
	Name                string
	Replicas, InService int
	// Budgeted says whether the group has a budget (readiness.per_group
	// and two replicas or more); Holds whether it holds, Desired how
	// many it needs in service.
	Budgeted, Holds bool
	Desired         int
	// Attention marks a group below its budget or with no replica in
	// service: it comes first.
	Attention bool
}

// newGroupsView lays out the groups, those needing attention first, each
// part in configuration order; none when the pool lists none (no backend
// has a group).
func newGroupsView(groups []budget.Group) groupsView {
	rows := make([]groupRow, len(groups))
	for i, g := range groups {
		rows[i] = groupRow{Name: g.Name, Replicas: g.Expected, InService: g.CurrentHealthy, Budgeted: g.Budgeted, Holds: g.Holds(),
			Desired: g.DesiredHealthy, Attention: !g.Holds() || g.CurrentHealthy == 0}
	}
	slices.SortStableFunc(rows, func(a, b groupRow) int {
		switch {
		case a.Attention == b.Attention:
			return 0
		case a.Attention:
			return -1
		}
		return 1
	})
	v := groupsView{Total: len(rows)}
	if len(rows) > maxGroupRows {
		v.More = len(rows) - maxGroupRows
		rows = rows[:maxGroupRows]
	}
	v.Rows = rows
	return v
}

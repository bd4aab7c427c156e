package readiness

import (
	"testing"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/pool"
)

// TestSelfViewHoldsOnlyWhenJudged: a replica publishes its budget as
// holding only once every backend has a verdict and discovery has
// delivered; before, an optimistic count (a dead backend still unknown)
// would make peer-relative peers whose budget fails unready.
func TestSelfViewHoldsOnlyWhenJudged(t *testing.T) {
	holds := budget.Budget{Expected: 6, CurrentHealthy: 5, DesiredHealthy: 4, DisruptionsAllowed: 1}
	for _, tc := range []struct {
		name    string
		awaited pool.Awaited
		want    bool
	}{
		{"judged", pool.Awaited{}, true},
		{"a backend without a verdict", pool.Awaited{Backends: []string{"b1"}, Unjudged: 1}, false},
		{"discovery awaited", pool.Awaited{Discovery: []string{"dns_sd_configs[0]"}}, false},
	} {
		v := selfView("r0", nil, holds, nil, tc.awaited, true, false)
		if v.BudgetHolds != tc.want || !v.Ready || v.Expected != 6 || v.InService != 5 || v.DisruptionsAllowed != 1 || v.Name != "r0" {
			t.Errorf("%s: view %+v, want budget_holds %v and the budget's numbers", tc.name, v, tc.want)
		}
	}
	if v := selfView("r0", nil, budget.Budget{Expected: 6, CurrentHealthy: 3, DesiredHealthy: 4}, nil, pool.Awaited{}, true, false); v.BudgetHolds {
		t.Errorf("a budget that does not hold is published as holding: %+v", v)
	}
}

// TestSelfViewGroupsHold: a replica publishes its groups as holding when
// every group holds its budget (or none has one), and only once every
// backend has a verdict and discovery has delivered, as its pool budget.
func TestSelfViewGroupsHold(t *testing.T) {
	holds := budget.Budget{Expected: 4, CurrentHealthy: 3, DesiredHealthy: 2, DisruptionsAllowed: 1}
	whole := []budget.Group{group("s1", 2, 2, 1), group("s2", 2, 1, 1)}
	deadShard := []budget.Group{group("s1", 2, 0, 1), group("s2", 2, 2, 1)}
	for _, tc := range []struct {
		name    string
		groups  []budget.Group
		awaited pool.Awaited
		want    bool
	}{
		{"no group budget", nil, pool.Awaited{}, true},
		{"every group holds", whole, pool.Awaited{}, true},
		{"a dead shard", deadShard, pool.Awaited{}, false},
		{"every group holds, a backend without a verdict", whole, pool.Awaited{Backends: []string{"s1-a"}, Unjudged: 1}, false},
		{"every group holds, discovery awaited", whole, pool.Awaited{Discovery: []string{"file_sd_configs[0]"}}, false},
	} {
		if v := selfView("r0", nil, holds, tc.groups, tc.awaited, true, false); v.GroupsHold != tc.want {
			t.Errorf("%s: groups_hold %v, want %v", tc.name, v.GroupsHold, tc.want)
		}
	}
}

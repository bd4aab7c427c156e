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
		v := selfView("r0", nil, holds, tc.awaited, true, false)
		if v.BudgetHolds != tc.want || !v.Ready || v.Expected != 6 || v.InService != 5 || v.DisruptionsAllowed != 1 || v.Name != "r0" {
			t.Errorf("%s: view %+v, want budget_holds %v and the budget's numbers", tc.name, v, tc.want)
		}
	}
	if v := selfView("r0", nil, budget.Budget{Expected: 6, CurrentHealthy: 3, DesiredHealthy: 4}, pool.Awaited{}, true, false); v.BudgetHolds {
		t.Errorf("a budget that does not hold is published as holding: %+v", v)
	}
}

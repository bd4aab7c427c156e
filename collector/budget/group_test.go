package budget

import (
	"testing"

	"github.com/probegate/probegate/config"
)

// TestComputeGroup is the per-group budget: the pool's arithmetic over a
// group's replicas, percentages rounding up alike, and no budget at all
// when readiness.per_group is unset or the group has a single replica.
func TestComputeGroup(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		minAvailable, maxUnavailable string
		replicas, inService          int
		budgeted, holds              bool
		desired, allowed             int
	}{
		{name: "off", replicas: 2, inService: 0, holds: true, allowed: 0},
		{name: "off, all in service", replicas: 3, inService: 3, holds: true, allowed: 3},
		{name: "one replica has no budget", maxUnavailable: "1", replicas: 1, inService: 0, holds: true},
		{name: "max_unavailable 1 of 2", maxUnavailable: "1", replicas: 2, inService: 2, budgeted: true, holds: true, desired: 1, allowed: 1},
		{name: "max_unavailable 1 of 2, one out", maxUnavailable: "1", replicas: 2, inService: 1, budgeted: true, holds: true, desired: 1, allowed: 0},
		{name: "max_unavailable 1 of 2, both out", maxUnavailable: "1", replicas: 2, inService: 0, budgeted: true, holds: false, desired: 1},
		{name: "max_unavailable 30% of 2 rounds up to 1", maxUnavailable: "30%", replicas: 2, inService: 2, budgeted: true, holds: true, desired: 1, allowed: 1},
		{name: "min_available 50% of 3 needs 2", minAvailable: "50%", replicas: 3, inService: 2, budgeted: true, holds: true, desired: 2, allowed: 0},
		{name: "min_available 3 of 2", minAvailable: "3", replicas: 2, inService: 2, budgeted: true, holds: false, desired: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g config.GroupBudget
			if tc.minAvailable != "" {
				g.MinAvailable = intOrPercent(t, tc.minAvailable)
			}
			if tc.maxUnavailable != "" {
				g.MaxUnavailable = intOrPercent(t, tc.maxUnavailable)
			}
			b := ComputeGroup(g, "s1", tc.replicas, tc.inService)
			if b.Name != "s1" || b.Budgeted != tc.budgeted || b.Holds() != tc.holds || b.DesiredHealthy != tc.desired ||
				b.DisruptionsAllowed != tc.allowed || b.Expected != tc.replicas || b.CurrentHealthy != tc.inService {
				t.Errorf("ComputeGroup = %+v holds=%v; want budgeted=%v holds=%v desired %d allowed %d",
					b, b.Holds(), tc.budgeted, tc.holds, tc.desired, tc.allowed)
			}
			// A group without a budget never holds an ejection or a
			// maintenance back, even with none of it in service.
			if want := !tc.budgeted || tc.allowed > 0; b.AllowsDisruption() != want {
				t.Errorf("AllowsDisruption = %v, want %v", b.AllowsDisruption(), want)
			}
		})
	}
}

package readiness

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/probegate/probegate/collector/budget"
)

// group is a budgeted replica group of replicas with inService in
// service, needing desired.
func group(name string, replicas, inService, desired int) budget.Group {
	return budget.Group{Name: name, Budgeted: true,
		Budget: budget.Budget{Expected: replicas, CurrentHealthy: inService, DesiredHealthy: desired, DisruptionsAllowed: max(0, inService-desired)}}
}

// TestJudgeGroups: the group_budget check passes while every group holds
// its budget or per_group is off, and fails naming each group below it,
// at most maxNamedGroups of them.
func TestJudgeGroups(t *testing.T) {
	alone := budget.Group{Name: "c", Budget: budget.Budget{Expected: 1}}
	for _, tc := range []struct {
		name   string
		groups []budget.Group
		fails  bool
		says   string
	}{
		{name: "off", groups: nil, says: "off: readiness.per_group is not set"},
		{name: "holding", groups: []budget.Group{group("a", 2, 1, 1), group("b", 2, 2, 1), alone},
			says: "2 of 3 replica groups have a budget, and every one holds"},
		{name: "one below", groups: []budget.Group{group("a", 2, 0, 1), group("b", 2, 2, 1), alone}, fails: true,
			says: "replica groups below their budget: a (0 of 2 in service, 1 needed)"},
		{name: "two below", groups: []budget.Group{group("a", 2, 0, 1), group("b", 3, 1, 2)}, fails: true,
			says: "replica groups below their budget: a (0 of 2 in service, 1 needed), b (1 of 3 in service, 2 needed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			output, err := groupBudgetCheck(func() []budget.Group { return tc.groups })(context.Background())
			got := output
			if err != nil {
				got = err.Error()
			}
			if (err != nil) != tc.fails || got != tc.says {
				t.Errorf("check = %q, %v; want %q failing %v", output, err, tc.says, tc.fails)
			}
		})
	}
	var many []budget.Group
	for i := range 25 {
		many = append(many, group(fmt.Sprintf("g%d", i), 2, 0, 1))
	}
	if _, err := judgeGroups(many); err == nil || strings.Count(err.Error(), "in service") != maxNamedGroups || !strings.HasSuffix(err.Error(), "and 15 more") {
		t.Errorf("25 groups below: %v; want %d named and 15 more", err, maxNamedGroups)
	}
}

package budget

import (
	"fmt"

	"github.com/probegate/probegate/config"
)

// CheckStaticBudget refuses a readiness budget that the backends cfg lists
// cannot meet even all in service, when no service discovery can add
// more: /ready would answer 503 for ever. It judges by Compute, the
// arithmetic the pool applies at run time, so that check-config and the
// pool cannot disagree. The problem names readiness.min_available: only
// it can ask for more backends than there are, since max_unavailable
// leaves at most every backend to be in service.
//
// It refuses a readiness.per_group that a listed group cannot meet in the
// same way, naming the group: its /ready check group_budget would fail
// for ever.
func CheckStaticBudget(cfg *config.Config) error {
	if len(cfg.DiscoveryBlocks()) > 0 {
		return nil
	}
	var problems []config.Problem
	if p, ok := checkPoolBudget(cfg); !ok {
		problems = append(problems, p)
	}
	problems = append(problems, checkGroupBudgets(cfg)...)
	if len(problems) == 0 {
		return nil
	}
	return &config.Error{Problems: problems}
}

// checkPoolBudget is CheckStaticBudget's judgement of the pool's budget.
func checkPoolBudget(cfg *config.Config) (config.Problem, bool) {
	n := len(cfg.Backends)
	b := Compute(cfg.Readiness, n, n)
	if b.Holds() {
		return config.Problem{}, true
	}
	setting := "the default readiness.min_available 1"
	if cfg.Readiness.MinAvailable != nil {
		setting = "min_available " + cfg.Readiness.MinAvailable.String()
	}
	listed := "only " + countBackends(n)
	if n == 0 {
		listed = "none"
	}
	return cfg.ProblemAt("readiness.min_available",
		"%s needs %s in service, but the list has %s and no service discovery adds more: /ready would answer 503 for ever",
		setting, countBackends(b.DesiredHealthy), listed), false
}

// checkGroupBudgets is CheckStaticBudget's judgement of every listed
// group's budget, with every replica in service: one problem per group
// that cannot meet it, in the order of the groups' first members.
func checkGroupBudgets(cfg *config.Config) []config.Problem {
	per := cfg.Readiness.PerGroup
	if per.MinAvailable == nil {
		return nil
	}
	var order []string
	replicas := map[string]int{}
	for _, b := range cfg.Backends {
		g := config.GroupOf(b.Name, b.Group)
		if replicas[g] == 0 {
			order = append(order, g)
		}
		replicas[g]++
	}
	var problems []config.Problem
	for _, g := range order {
		n := replicas[g]
		b := ComputeGroup(per, g, n, n)
		if b.Holds() {
			continue
		}
		problems = append(problems, cfg.ProblemAt("readiness.per_group.min_available",
			"min_available %s needs %s in service in group %q, but it has only %s and no service discovery adds more: /ready would answer 503 for ever (check group_budget)",
			per.MinAvailable, countBackends(b.DesiredHealthy), g, countBackends(n)))
	}
	return problems
}

// countBackends is "1 backend" or "n backends".
func countBackends(n int) string {
	if n == 1 {
		return "1 backend"
	}
	return fmt.Sprintf("%d backends", n)
}

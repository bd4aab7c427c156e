package readiness

import (
	"context"
	"fmt"
	"strings"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/maintenance"
)

// maxNamedGroups bounds the groups the group_budget check names: a pool
// of thousands of groups, each down, would otherwise answer every
// balancer's poll with all of them.
const maxNamedGroups = 10

// groupBudgetCheck is the gate's `group_budget` check over the replica
// groups' budgets (readiness.per_group), as the pool gives them: it fails
// while some group is below its budget, naming the groups, and passes
// saying how many groups have one otherwise. With readiness.per_group
// unset (groups nil) it passes, saying so: a reload may set it, and the
// check is then in force without a restart. Groups below their budget
// are judged against the peers by override, as the pool's budget is: one
// dead shard must not take every replica out of the balancer, and with it
// the answers of every other shard.
func groupBudgetCheck(groups func() []budget.Group, override *peerOverride) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		output, failed := judgeGroups(groups())
		return output, override.judge(maintenance.GroupBudgets, failed)
	}
}

// judgeGroups is the group_budget check's answer for groups before any
// peer is asked: its output when every group holds, failed naming the
// groups below their budget otherwise.
func judgeGroups(groups []budget.Group) (output, failed string) {
	if groups == nil {
		return "off: readiness.per_group is not set", ""
	}
	budgeted, below := 0, 0
	var named []string
	for _, g := range groups {
		if g.Budgeted {
			budgeted++
		}
		if g.Holds() {
			continue
		}
		below++
		if len(named) < maxNamedGroups {
			named = append(named, fmt.Sprintf("%s (%d of %d in service, %d needed)", g.Name, g.CurrentHealthy, g.Expected, g.DesiredHealthy))
		}
	}
	if below == 0 {
		return fmt.Sprintf("%d of %d replica groups have a budget, and every one holds", budgeted, len(groups)), ""
	}
	list := strings.Join(named, ", ")
	if more := below - len(named); more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	return "", "replica groups below their budget: " + list
}

// groupsHold reports whether every group of groups holds its budget: what
// a replica view publishes as groups_hold. Without a group budget
// (groups nil) they hold.
func groupsHold(groups []budget.Group) bool {
	for _, g := range groups {
		if !g.Holds() {
			return false
		}
	}
	return true
}

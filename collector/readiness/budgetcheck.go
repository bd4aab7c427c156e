package readiness

import (
	"context"
	"fmt"
	"strings"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/maintenance"
)

// budgetCheck is the gate's `backends` check over budget: the budget's
// numbers in the output whether it holds or not. While awaited names
// discovery sources that have not delivered, the pool is partial and the
// check fails whatever the budget says. A budget that does not hold is
// judged against the peers by override (peer-relative readiness).
func budgetCheck(current func() budget.Budget, awaited func() []string, override *peerOverride) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		output, failed, err := judgeBudget(current(), awaited())
		if err != nil {
			override.record(maintenance.PoolBudget, false)
			return "", err
		}
		return output, override.judge(maintenance.PoolBudget, failed)
	}
}

// judgeBudget is the `backends` check's answer for budget b before any
// peer is asked: its numbers when it holds, failed saying why when it
// does not. awaited are the discovery sources that have not delivered
// their first targets: until they have, b is the budget of a partial pool
// (its expected too small, a backend to come uncounted), which cannot say
// that the pool is ready, so the check fails with err, and no peer
// overrides it: a peer's view is no evidence about a pool this replica
// does not know yet.
func judgeBudget(b budget.Budget, awaited []string) (output, failed string, err error) {
	numbers := fmt.Sprintf("expected=%d current_healthy=%d desired_healthy=%d disruptions_allowed=%d",
		b.Expected, b.CurrentHealthy, b.DesiredHealthy, b.DisruptionsAllowed)
	if len(awaited) > 0 {
		return "", "", fmt.Errorf("waiting for service discovery: %s has not delivered its first targets, so the pool is not known yet (so far %s)",
			strings.Join(awaited, ", "), numbers)
	}
	if b.Holds() {
		return numbers, "", nil
	}
	return "", "readiness budget does not hold: " + numbers, nil
}

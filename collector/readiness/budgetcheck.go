package readiness

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/maintenance"
	"github.com/probegate/probegate/gate"
)

// peerViews are the live peers' views and whether they are current, as
// maintenance.Replicas.Peers gives them.
type peerViews func() ([]maintenance.ReplicaView, bool)

// budgetCheck is the gate's `backends` check over budget: the budget's
// numbers in the output whether it holds or not. While awaited names
// discovery sources that have not delivered, the pool is partial and the
// check fails whatever the budget says. With peers (a shared store) and
// peerRelative() true, a budget that does not hold fails only when a live
// peer is better off; otherwise the check passes with a warning, and
// override (probegate_readiness_peer_override) says so.
func budgetCheck(current func() budget.Budget, awaited func() []string, peers peerViews, peerRelative func() bool, override prometheus.Gauge) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		var relative peerViews
		if peers != nil && peerRelative() {
			relative = peers
		}
		output, overridden, err := judgeBudget(current(), awaited(), relative)
		if override != nil {
			override.Set(0)
			if overridden {
				override.Set(1)
			}
		}
		return output, err
	}
}

// judgeBudget is the `backends` check's answer for budget b. awaited are
// the discovery sources that have not delivered their first targets: until
// they have, b is the budget of a partial pool (its expected too small, a
// backend to come uncounted), which cannot say that the pool is ready, so
// the check fails, and no peer overrides it: a peer's view is no
// evidence about a pool this replica does not know yet. peers, nil unless
// readiness is peer-relative, is asked only when b does not hold.
// overridden reports a budget that does not hold passing with a warning
// because no live peer is better off.
func judgeBudget(b budget.Budget, awaited []string, peers peerViews) (output string, overridden bool, err error) {
	numbers := fmt.Sprintf("expected=%d current_healthy=%d desired_healthy=%d disruptions_allowed=%d",
		b.Expected, b.CurrentHealthy, b.DesiredHealthy, b.DisruptionsAllowed)
	if len(awaited) > 0 {
		return "", false, fmt.Errorf("waiting for service discovery: %s has not delivered its first targets, so the pool is not known yet (so far %s)",
			strings.Join(awaited, ", "), numbers)
	}
	if b.Holds() {
		return numbers, false, nil
	}
	failed := "readiness budget does not hold: " + numbers
	if peers == nil {
		return "", false, errors.New(failed)
	}
	verdict, why := maintenance.JudgePeers(peers())
	if verdict == maintenance.PeerFail {
		return "", false, errors.New(failed + "; " + why)
	}
	return "", true, gate.Warn(failed + "; " + why)
}

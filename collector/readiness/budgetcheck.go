package readiness

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/maintenance"
	"github.com/probegate/probegate/gate"
)

// peerViews are the live peers' views and whether they are current, as
// maintenance.Replicas.Peers gives them.
type peerViews func() ([]maintenance.ReplicaView, bool)

// budgetCheck is the gate's `backends` check over budget: the budget's
// numbers in the output whether it holds or not. With peers (a shared
// store) and peerRelative() true, a budget that does not hold fails only
// when a live peer is better off; otherwise the check passes with a
// warning, and override (probegate_readiness_peer_override) says so.
func budgetCheck(current func() budget.Budget, peers peerViews, peerRelative func() bool, override prometheus.Gauge) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		var relative peerViews
		if peers != nil && peerRelative() {
			relative = peers
		}
		output, overridden, err := judgeBudget(current(), relative)
		if override != nil {
			override.Set(0)
			if overridden {
				override.Set(1)
			}
		}
		return output, err
	}
}

// judgeBudget is the `backends` check's answer for budget b. peers, nil
// unless readiness is peer-relative, is asked only when b does not hold.
// overridden reports a budget that does not hold passing with a warning
// because no live peer is better off.
func judgeBudget(b budget.Budget, peers peerViews) (output string, overridden bool, err error) {
	numbers := fmt.Sprintf("expected=%d current_healthy=%d desired_healthy=%d disruptions_allowed=%d",
		b.Expected, b.CurrentHealthy, b.DesiredHealthy, b.DisruptionsAllowed)
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

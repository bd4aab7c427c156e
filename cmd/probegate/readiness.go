package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/maintenance"
	"github.com/probegate/probegate/gate"
)

// budgetCheck is the gate's `backends` check: the pool's readiness budget,
// with its numbers in the output whether it holds or not. With
// readiness.peer_relative a budget that does not hold fails only when a
// live peer is better off; otherwise the check passes with a warning, and
// probegate_readiness_peer_override says so.
func (s *server) budgetCheck(reg prometheus.Registerer) func(context.Context) (string, error) {
	var override prometheus.Gauge
	if s.maint.replicas != nil {
		override = prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "probegate_readiness_peer_override",
			Help: "Whether this replica stays ready although its readiness budget does not hold, because no live peer's budget holds either (1) or not (0).",
		})
		reg.MustRegister(override)
	}
	return func(context.Context) (string, error) {
		b := s.pool.Budget()
		numbers := fmt.Sprintf("expected=%d current_healthy=%d desired_healthy=%d disruptions_allowed=%d",
			b.Expected, b.CurrentHealthy, b.DesiredHealthy, b.DisruptionsAllowed)
		overridden := false
		if override != nil {
			defer func() { override.Set(boolGauge(overridden)) }()
		}
		if b.Holds() {
			return numbers, nil
		}
		failed := "readiness budget does not hold: " + numbers
		if s.maint.replicas == nil || !s.targets.Running().Readiness.PeerRelative {
			return "", errors.New(failed)
		}
		verdict, why := maintenance.JudgePeers(s.maint.replicas.Peers(s.opts.replicaName()))
		if verdict == maintenance.PeerFail {
			return "", errors.New(failed + "; " + why)
		}
		overridden = true
		return "", gate.Warn(failed + "; " + why)
	}
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

package fanout

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/config"
)

// This file counts the backends a round cut as stragglers: with
// fanout.stragglers on, a round stops waiting for the groups its peers
// outrun (package straggler has the rule, groupround.go the waiting).

// stragglerCounts is probegate_fanout_stragglers_total{backend}: the
// rounds that stopped waiting for each backend. It is exported while the
// fan-out cuts stragglers.
type stragglerCounts = backendSeries[prometheus.Counter]

func newStragglerCounts() *stragglerCounts {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "probegate_fanout_stragglers_total",
		Help: "Fan-out rounds that answered without the backend because its peers had answered long before (fanout.stragglers).",
	}, []string{"backend"})
	return &stragglerCounts{vec: vec, with: vec.WithLabelValues, remove: vec.DeleteLabelValues,
		exported: func(c config.Fanout) bool { return c.Enabled && c.Stragglers.Enabled }}
}

// countStraggler counts a round cut without the backend. A nil *Metrics
// counts nothing.
func (m *Metrics) countStraggler(backend string) {
	if m != nil {
		m.stragglers.child(backend).Inc()
	}
}

package fanout

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// This file counts what replica groups cost beyond one request a group:
// hedges, won or lost, hedges the token bucket refused, and failovers.
// A group of one backend can neither hedge nor fail over, so only groups
// of two or more have series, and only while their feature is on.

// hedgeCounts are one group's probegate_fanout_hedges_total children.
type hedgeCounts struct{ won, lost prometheus.Counter }

// hedgeSeries is probegate_fanout_hedges_total{group, outcome}.
type hedgeSeries = backendSeries[hedgeCounts]

func newHedgeSeries() *hedgeSeries {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "probegate_fanout_hedges_total",
		Help: "Hedges sent to a sibling of a replica group's late replica (fanout.hedge), by whether the hedge's answer was the group's (won) or not (lost).",
	}, []string{"group", "outcome"})
	return &hedgeSeries{vec: vec,
		with: func(g ...string) hedgeCounts {
			return hedgeCounts{won: vec.WithLabelValues(g[0], "won"), lost: vec.WithLabelValues(g[0], "lost")}
		},
		remove: func(g ...string) bool {
			won, lost := vec.DeleteLabelValues(g[0], "won"), vec.DeleteLabelValues(g[0], "lost")
			return won || lost
		},
		exported: func(c config.Fanout) bool { return c.Enabled && c.Hedge.Enabled },
		namesIn:  replicatedGroups}
}

// failoverSeries is probegate_fanout_failovers_total{group}.
type failoverSeries = backendSeries[prometheus.Counter]

func newFailoverSeries() *failoverSeries {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "probegate_fanout_failovers_total",
		Help: "Requests of a replica group sent to a sibling at once because the replica asked failed before its answer began (fanout.failover).",
	}, []string{"group"})
	return &failoverSeries{vec: vec, with: vec.WithLabelValues, remove: vec.DeleteLabelValues,
		exported: func(c config.Fanout) bool { return c.Enabled && c.Failover },
		namesIn:  replicatedGroups}
}

// replicatedGroups are the pool's groups of two or more backends, in
// configuration order of their first member.
func replicatedGroups(p *pool.Pool) []string {
	counts := map[string]int{}
	var order []string
	for _, b := range p.Backends() {
		g := b.Group()
		if counts[g] == 0 {
			order = append(order, g)
		}
		counts[g]++
	}
	var out []string
	for _, g := range order {
		if counts[g] > 1 {
			out = append(out, g)
		}
	}
	return out
}

// countHedge counts a hedge of group, won when its answer was the
// group's. A nil *Metrics counts nothing.
func (m *Metrics) countHedge(group string, won bool) {
	if m == nil {
		return
	}
	c := m.hedges.child(group)
	if won {
		c.won.Inc()
	} else {
		c.lost.Inc()
	}
}

// countHedgeRefused counts a hedge the token bucket had no token for.
func (m *Metrics) countHedgeRefused() {
	if m != nil {
		m.hedgesRefused.Inc()
	}
}

// countFailover counts a failover in group.
func (m *Metrics) countFailover(group string) {
	if m != nil {
		m.failovers.child(group).Inc()
	}
}

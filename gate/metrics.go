package gate

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// A Gate exports its own state.
var _ prometheus.Collector = (*Gate)(nil)

// initMetrics builds the descriptors of the gate's own series.
func (g *Gate) initMetrics(namespace string) {
	g.readyDesc = prometheus.NewDesc(
		prometheus.BuildFQName(namespace, "gate", "ready"),
		"Whether /ready answers 200: not draining and every check passes (1) or not (0).",
		nil, nil)
	g.drainDesc = prometheus.NewDesc(
		prometheus.BuildFQName(namespace, "gate", "draining"),
		"Whether the drain has begun (1) or not (0).",
		nil, nil)
	g.checkDesc = prometheus.NewDesc(
		prometheus.BuildFQName(namespace, "gate", "check_success"),
		"Whether the readiness check passed in its latest evaluation (1) or not (0).",
		[]string{"check"}, nil)
}

// Describe sends the descriptors of the gate's series.
func (g *Gate) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.readyDesc
	ch <- g.drainDesc
	ch <- g.checkDesc
}

// Collect sends the gate's state as /ready sees it now. A scrape shares
// the cached evaluation with /ready, so it runs the checks at most once
// per check interval and never while /ready already is.
func (g *Gate) Collect(ch chan<- prometheus.Metric) {
	// The evaluation is bounded by the check timeout, so waiting on it
	// without a deadline of our own cannot hang a scrape.
	ev, _ := g.current(context.Background())
	draining := g.draining.Load()
	ch <- prometheus.MustNewConstMetric(g.readyDesc, prometheus.GaugeValue, boolValue(ev.pass && !draining))
	ch <- prometheus.MustNewConstMetric(g.drainDesc, prometheus.GaugeValue, boolValue(draining))
	for _, r := range ev.results {
		ch <- prometheus.MustNewConstMetric(g.checkDesc, prometheus.GaugeValue, boolValue(r.pass), r.name)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

package fanout

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// durationBuckets span a loopback round trip up to the default fan-out
// timeout of 30s and beyond.
var durationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Metrics is the fan-out's instrumentation, observed as rounds finish.
// Per-backend errors are counted by the pool and exported with the other
// backend series. A nil *Metrics observes nothing.
type Metrics struct {
	// Requests counts fan-out rounds.
	Requests prometheus.Counter
	// Partial counts rounds where fewer backends contributed than were
	// configured.
	Partial prometheus.Counter
	// Failed counts rounds where no backend contributed.
	Failed prometheus.Counter
	// Duration is the duration of a whole round.
	Duration prometheus.Histogram
	// Rejected counts rounds refused because fanout.max_concurrent rounds
	// were in flight.
	Rejected prometheus.Counter

	// enabled is whether the fan-out is enabled: the series are exported
	// only then, since a feature that is off exports none. Update sets it.
	enabled atomic.Bool
}

// NewMetrics creates the fan-out's metrics and registers them with reg.
// Once given to a Fanout they are exported only while it is enabled.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Requests: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "probegate_fanout_requests_total",
			Help: "Fan-out requests served.",
		}),
		Partial: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "probegate_fanout_partial_total",
			Help: "Fan-out requests to which fewer backends contributed than are configured.",
		}),
		Failed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "probegate_fanout_failed_total",
			Help: "Fan-out requests to which no backend contributed.",
		}),
		Duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "probegate_fanout_duration_seconds",
			Help:    "Duration of fan-out requests, from receipt to the merged response.",
			Buckets: durationBuckets,
		}),
	}
	m.Rejected = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "probegate_fanout_rejected_total",
		Help: "Fan-out requests refused with 503 because fanout.max_concurrent rounds were in flight; no backend was asked.",
	})
	m.enabled.Store(true)
	reg.MustRegister(metricsCollector{m})
	return m
}

// metricsCollector exports the fan-out's metrics while it is enabled.
type metricsCollector struct{ m *Metrics }

func (c metricsCollector) all() []prometheus.Collector {
	return []prometheus.Collector{c.m.Requests, c.m.Partial, c.m.Failed, c.m.Duration, c.m.Rejected}
}

func (c metricsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.all() {
		m.Describe(ch)
	}
}

func (c metricsCollector) Collect(ch chan<- prometheus.Metric) {
	if !c.m.enabled.Load() {
		return
	}
	for _, m := range c.all() {
		m.Collect(ch)
	}
}

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

	// partialMaintenance counts the partial rounds whose only missing
	// backends were in maintenance.
	partialMaintenance prometheus.Counter
	// rejectedMaxConcurrent counts rounds refused because
	// fanout.max_concurrent rounds were in flight, rejectedLoop requests
	// refused because they went round a loop of probegates:
	// probegate_fanout_rejected_total with reason max_concurrent and loop.
	rejectedMaxConcurrent, rejectedLoop prometheus.Counter
	// quorumFailures counts rounds answered 503 because fewer backends
	// contributed than fanout.min_contributors asks for.
	quorumFailures prometheus.Counter
	// correlatedFailures counts rounds in which every backend asked
	// failed, so that no failure was charged to a backend.
	correlatedFailures prometheus.Counter

	// partialStragglers counts the partial rounds whose missing backends
	// were all cut as stragglers or in maintenance, at least one cut.
	partialStragglers prometheus.Counter

	// backendDuration is each backend's duration in rounds.
	backendDuration *backendDurations
	// stragglers counts each backend's straggler cuts.
	stragglers *stragglerCounts
	// rejected is probegate_fanout_rejected_total, by reason.
	rejected *prometheus.CounterVec
	// hedges counts each replica group's hedges, won or lost, and
	// hedgesRefused the hedges the token bucket refused; failovers each
	// group's failovers.
	hedges        *hedgeSeries
	hedgesRefused prometheus.Counter
	failovers     *failoverSeries
	// hedging is whether the fan-out hedges: hedgesRefused is exported
	// only then. Update sets it.
	hedging atomic.Bool

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
	rejected := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "probegate_fanout_rejected_total",
		Help: "Fan-out requests refused before any backend was asked, by reason: max_concurrent (503, fanout.max_concurrent rounds in flight) or loop (508, the request came back through a probegate it passed or passed fanout.max_hops of them).",
	}, []string{"reason"})
	m.rejectedMaxConcurrent = rejected.WithLabelValues("max_concurrent")
	m.rejectedLoop = rejected.WithLabelValues("loop")
	m.quorumFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "probegate_fanout_quorum_failures_total",
		Help: "Fan-out requests answered 503 because fewer backends contributed than fanout.min_contributors asks for.",
	})
	m.correlatedFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "probegate_fanout_correlated_failures_total",
		Help: "Fan-out requests in which every backend asked failed alike: none of the failures fed passive health or outlier detection.",
	})
	m.partialMaintenance = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "probegate_fanout_partial_maintenance_total",
		Help: "Partial fan-out requests whose only missing backends were in maintenance: planned, not a failure.",
	})
	m.partialStragglers = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "probegate_fanout_partial_stragglers_total",
		Help: "Partial fan-out requests whose missing backends were all stragglers cut (fanout.stragglers) or in maintenance, at least one cut: by design, not a failure.",
	})
	m.backendDuration = newBackendDurations()
	m.stragglers = newStragglerCounts()
	m.rejected = rejected
	m.hedges = newHedgeSeries()
	m.hedgesRefused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "probegate_fanout_hedges_refused_total",
		Help: "Hedges a round wanted but did not send, because they would have passed fanout.hedge.max_percent of the backend requests.",
	})
	m.failovers = newFailoverSeries()
	m.enabled.Store(true)
	reg.MustRegister(metricsCollector{m})
	return m
}

// metricsCollector exports the fan-out's metrics while it is enabled.
type metricsCollector struct{ m *Metrics }

func (c metricsCollector) all() []prometheus.Collector {
	return []prometheus.Collector{c.m.Requests, c.m.Partial, c.m.Failed, c.m.Duration, c.m.rejected,
		c.m.quorumFailures, c.m.correlatedFailures, c.m.partialMaintenance, c.m.partialStragglers,
		c.m.backendDuration, c.m.stragglers, c.m.hedges, c.m.failovers}
}

func (c metricsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.all() {
		m.Describe(ch)
	}
	c.m.hedgesRefused.Describe(ch)
}

func (c metricsCollector) Collect(ch chan<- prometheus.Metric) {
	if !c.m.enabled.Load() {
		return
	}
	for _, m := range c.all() {
		m.Collect(ch)
	}
	if c.m.hedging.Load() {
		c.m.hedgesRefused.Collect(ch)
	}
}

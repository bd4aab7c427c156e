package exporter

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/health"
)

// metricsNamespace prefixes every probegate metric name.
const metricsNamespace = "probegate"

// probeDurationBuckets span loopback probes (well under a millisecond) up to
// probe timeouts of several seconds.
var probeDurationBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// Metrics is probegate's direct instrumentation: the numbers that are
// observed as they happen rather than mirrored from the pool at scrape time
// (those are the exporter's). Build it with NewMetrics; a nil *Metrics
// observes nothing, so components work without it in tests.
type Metrics struct {
	// ProbeDuration is probegate_probe_duration_seconds{class}.
	ProbeDuration *prometheus.HistogramVec
	// ConfigReloadSuccess is 1 when the last reload attempt succeeded.
	ConfigReloadSuccess prometheus.Gauge
	// ConfigReloadTimestamp is the Unix time of the last successful reload.
	ConfigReloadTimestamp prometheus.Gauge

	// probeDurationByClass holds the histogram curried once per class so
	// that observing a probe does no label lookup.
	probeDurationByClass [health.NumClasses]prometheus.Observer
}

// NewMetrics creates probegate's instrumentation and registers it with reg.
// Every class of probegate_probe_duration_seconds exists from the start.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	name := func(n string) string { return prometheus.BuildFQName(metricsNamespace, "", n) }
	m := &Metrics{
		ProbeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    name("probe_duration_seconds"),
			Help:    "Duration of health probes, by result class (ok, refused, failed).",
			Buckets: probeDurationBuckets,
		}, []string{"class"}),
		ConfigReloadSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: name("config_last_reload_successful"),
			Help: "Whether the last configuration reload attempt succeeded (1) or kept the running configuration (0).",
		}),
		ConfigReloadTimestamp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: name("config_last_reload_success_timestamp_seconds"),
			Help: "Unix time of the last successful configuration load.",
		}),
	}
	for _, c := range health.Classes() {
		m.probeDurationByClass[c] = m.ProbeDuration.WithLabelValues(c.String())
	}
	reg.MustRegister(m.ProbeDuration, m.ConfigReloadSuccess, m.ConfigReloadTimestamp)
	return m
}

// ObserveProbe records the duration of one probe under its class.
func (m *Metrics) ObserveProbe(r health.Result) {
	if m == nil || r.Class >= health.NumClasses {
		return
	}
	m.probeDurationByClass[r.Class].Observe(r.Duration.Seconds())
}

// ObserveReload records a configuration load attempt that finished at now:
// the success gauge always, the timestamp only when it succeeded.
func (m *Metrics) ObserveReload(success bool, now time.Time) {
	if m == nil {
		return
	}
	m.ConfigReloadSuccess.Set(metricBool(success))
	if success {
		m.ConfigReloadTimestamp.Set(metricTimestamp(now))
	}
}

// metricTimestamp is t in Unix seconds. Whole seconds and the fraction are
// converted apart so that a timestamp such as x.25 stays exact.
func metricTimestamp(t time.Time) float64 {
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}

package vantage

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/pool"
)

// metrics are shared probing's series of one replica. They exist only
// while shared probing is on. The per-backend view of it is in /healthz,
// not in series: a label per backend and vantage point would multiply the
// pool's series.
type metrics struct {
	mode      *prometheus.GaugeVec
	assigned  prometheus.Gauge
	writes    *prometheus.CounterVec
	bytes     prometheus.Counter
	malformed prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		mode: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "probegate_probing_mode",
			Help: "Shared probing's mode, 1 on the one in force: shared (this replica probes its share) or local (it probes every backend, having lost the store or every peer).",
		}, []string{"mode"}),
		assigned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "probegate_shared_assigned_backends",
			Help: "Backends this replica probes under shared probing: its share, or every backend in local mode.",
		}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "probegate_shared_verdict_writes_total",
			Help: "Writes of this replica's verdicts to the shared store, by result (ok, error).",
		}, []string{"result"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "probegate_shared_verdict_written_bytes_total",
			Help: "Bytes of this replica's verdicts written to the shared store, keys included.",
		}),
		malformed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "probegate_shared_verdicts_malformed_total",
			Help: "Published verdicts ignored: they do not decode, or one more would exceed what is held (64 replicas about a backend, 200,000 verdicts in all).",
		}),
	}
	for _, result := range []string{"ok", "error"} {
		m.writes.WithLabelValues(result)
	}
	m.setMode(pool.ProbingLocal)
	if reg != nil {
		reg.MustRegister(m.mode, m.assigned, m.writes, m.bytes, m.malformed)
	}
	return m
}

// setMode sets 1 on mode and 0 on the other.
func (m *metrics) setMode(mode string) {
	for _, each := range []string{pool.ProbingShared, pool.ProbingLocal} {
		v := 0.0
		if each == mode {
			v = 1
		}
		m.mode.WithLabelValues(each).Set(v)
	}
}

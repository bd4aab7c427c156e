package maintenance

import "github.com/prometheus/client_golang/prometheus"

// The operations and results of probegate_maintenance_store_operations_total.
const (
	opLoad  = "load"
	opSwap  = "swap"
	opWatch = "watch"

	resultSuccess  = "success"
	resultConflict = "conflict"
	resultError    = "error"
	// resultCompacted is a watch that had to resume from a compacted
	// revision, and reads the entries afresh.
	resultCompacted = "compacted"
)

// metrics are the series of maintenance and its store.
type metrics struct {
	refusals   prometheus.Counter
	storeUp    prometheus.Gauge
	operations *prometheus.CounterVec
	conflicts  prometheus.Counter
}

// newMetrics registers the series of maintenance on reg; shared says that
// the store is watched for other writers' changes.
func newMetrics(reg prometheus.Registerer, shared bool) *metrics {
	m := &metrics{
		refusals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "probegate_maintenance_refusals_total",
			Help: "Maintenance requests refused because the readiness budget allowed no disruption.",
		}),
		storeUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "probegate_maintenance_store_up",
			Help: "Whether the last operation on the maintenance store succeeded (1) or not (0).",
		}),
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "probegate_maintenance_store_operations_total",
			Help: "Operations on the maintenance store by operation (load, swap, watch) and result (success, conflict, error; compacted: a watch resumed from a compacted revision and read the entries afresh).",
		}, []string{"operation", "result"}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "probegate_maintenance_store_conflicts_total",
			Help: "Writes to the maintenance store that lost a compare-and-swap to another writer and were retried on the new revision.",
		}),
	}
	for _, op := range []string{opLoad, opSwap} {
		m.operations.WithLabelValues(op, resultSuccess)
		m.operations.WithLabelValues(op, resultError)
	}
	m.operations.WithLabelValues(opSwap, resultConflict)
	if shared {
		for _, result := range []string{resultSuccess, resultError, resultCompacted} {
			m.operations.WithLabelValues(opWatch, result)
		}
	}
	reg.MustRegister(m.refusals, m.storeUp, m.operations, m.conflicts)
	return m
}

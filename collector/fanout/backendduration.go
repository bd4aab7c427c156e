package fanout

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/config"
)

// backendDurationBuckets are few on purpose: each is a series per
// backend. The native buckets carry the detail.
var backendDurationBuckets = []float64{0.001, 0.005, 0.025, 0.1, 0.5, 2.5, 10}

// backendDurations is probegate_fanout_backend_duration_seconds{backend}:
// how long each backend took to answer its part of a round, body
// included, or for a straggler cut, how long the round waited for it. It
// is exported while the fan-out is on.
type backendDurations = backendSeries[prometheus.Observer]

func newBackendDurations() *backendDurations {
	vec := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:                            "probegate_fanout_backend_duration_seconds",
		Help:                            "Duration of each backend's part in fan-out rounds, from the request sent to the end of the answer read, or to a straggler's cut.",
		Buckets:                         backendDurationBuckets,
		NativeHistogramBucketFactor:     1.1,
		NativeHistogramMaxBucketNumber:  100,
		NativeHistogramMinResetDuration: time.Hour,
	}, []string{"backend"})
	return &backendDurations{vec: vec, with: vec.WithLabelValues, remove: vec.DeleteLabelValues,
		exported: func(c config.Fanout) bool { return c.Enabled }}
}

// observeDuration records one backend's duration in a round.
func (m *Metrics) observeDuration(backend string, took time.Duration) {
	m.backendDuration.child(backend).Observe(took.Seconds())
}

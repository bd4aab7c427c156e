package fanout

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// backendDurationBuckets are few on purpose: each is a series per
// backend. The native buckets carry the detail.
var backendDurationBuckets = []float64{0.001, 0.005, 0.025, 0.1, 0.5, 2.5, 10}

// backendDurations is probegate_fanout_backend_duration_seconds{backend}:
// how long each backend took to answer its part of a round, body
// included. It exports nothing while the fan-out is off; while it is on,
// every backend of the pool has its histogram from the first scrape, and
// one that left the pool is forgotten at the next.
type backendDurations struct {
	vec *prometheus.HistogramVec
	// names maps each backend observed to its histogram, so that an
	// observation costs no label lookup, and to forget those gone.
	names sync.Map
	// fanout is the Fanout observing, set by New.
	fanout atomic.Pointer[Fanout]
}

func newBackendDurations() *backendDurations {
	return &backendDurations{vec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:                            "probegate_fanout_backend_duration_seconds",
		Help:                            "Duration of each backend's part in fan-out rounds, from the request sent to the end of the answer read.",
		Buckets:                         backendDurationBuckets,
		NativeHistogramBucketFactor:     1.1,
		NativeHistogramMaxBucketNumber:  100,
		NativeHistogramMinResetDuration: time.Hour,
	}, []string{"backend"})}
}

// observe records one backend's duration in a round.
func (d *backendDurations) observe(backend string, took time.Duration) {
	h, known := d.names.Load(backend)
	if !known {
		h, _ = d.names.LoadOrStore(backend, d.vec.WithLabelValues(backend))
	}
	h.(prometheus.Observer).Observe(took.Seconds())
}

// Describe implements prometheus.Collector.
func (d *backendDurations) Describe(ch chan<- *prometheus.Desc) { d.vec.Describe(ch) }

// Collect implements prometheus.Collector.
func (d *backendDurations) Collect(ch chan<- prometheus.Metric) {
	f := d.fanout.Load()
	if f == nil || !f.settings.Load().fanout.Enabled {
		return
	}
	inPool := make(map[string]bool)
	for _, b := range f.pool.Backends() {
		inPool[b.Name] = true
		if _, known := d.names.Load(b.Name); !known {
			d.names.LoadOrStore(b.Name, d.vec.WithLabelValues(b.Name))
		}
	}
	d.names.Range(func(name, _ any) bool {
		if !inPool[name.(string)] {
			d.vec.DeleteLabelValues(name.(string))
			d.names.Delete(name)
		}
		return true
	})
	d.vec.Collect(ch)
}

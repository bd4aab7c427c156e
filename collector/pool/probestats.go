package pool

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/history"
)

// probeDurationBuckets are the classic buckets of a backend's probe
// duration histogram: one, on purpose. Each bucket is a series per backend
// on /metrics, which the series budget (25 per backend with fan-out off)
// cannot afford more of; the native buckets carry the resolution for
// whoever scrapes them, and the one bound still tells a same-zone answer
// from a slow one in a classic scrape.
var probeDurationBuckets = []float64{0.1}

// probeStats is what a backend keeps about its probes beyond the state
// machine and the counters: their durations as a histogram, the
// certificate expiry of the last probe over TLS, and the last results for
// the status page. It is
// guarded by the backend's mutex, except the histogram, which is safe for
// concurrent use by itself.
type probeStats struct {
	// durations is nil for a backend that is not probed: a feature that
	// is off exports no series.
	durations prometheus.Histogram
	// certExpiry is the earliest NotAfter of the certificate chain the
	// last probe over TLS saw, zero until one did. A probe that fails
	// before the handshake keeps it: the certificate did not change.
	certExpiry time.Time
	history    history.Probes
}

// newProbeStats returns the probe stats of a backend, probed or not.
func newProbeStats(probed bool) probeStats {
	if !probed {
		return probeStats{}
	}
	return probeStats{durations: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "probegate_backend_probe_duration_seconds",
		Help:    "Duration of the backend's health probes.",
		Buckets: probeDurationBuckets,
		// Native buckets at the resolution Prometheus recommends, at most
		// 40 of them (each costs about 100 bytes a backend): a backend
		// whose latency wanders widely is kept at a coarser schema.
		NativeHistogramBucketFactor:     1.1,
		NativeHistogramMaxBucketNumber:  40,
		NativeHistogramMinResetDuration: time.Hour,
	})}
}

// recordLocked adds one probe result. It does not allocate once the
// histogram has the result's native bucket. The caller holds the
// backend's mutex.
func (s *probeStats) recordLocked(r health.Result) {
	if s.durations != nil {
		s.durations.Observe(r.Duration.Seconds())
	}
	if !r.TLSCertExpiry.IsZero() {
		s.certExpiry = r.TLSCertExpiry
	}
	s.history.Add(r)
}

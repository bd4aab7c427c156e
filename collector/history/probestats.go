package history

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/health"
)

// fastProbe is the upper bound of the classic bucket of a backend's probe
// duration histogram: one bucket, on purpose. Each bucket is a series per
// backend on /metrics, which the series budget (25 per backend with fan-out off)
// cannot afford more of; the native buckets carry the resolution for
// whoever scrapes them, and the one bound still tells a same-zone answer
// from a slow one in a classic scrape.
const fastProbe = 0.1

// ProbeStats is what a backend keeps about its probes beyond the state
// machine and the counters: their durations as a histogram, the
// certificate expiry of the last probe over TLS, and the last results for
// the status page. Its zero value is the stats of a backend not probed. It
// is not safe for concurrent use (the backend's mutex guards it), except
// the histogram, which is safe for concurrent use by itself.
type ProbeStats struct {
	// durations is nil for a backend that is not probed: a feature that
	// is off exports no series.
	durations *Durations
	// certExpiry is the earliest NotAfter of the certificate chain the
	// last probe over TLS saw, zero until one did. A probe that fails
	// before the handshake keeps it: the certificate did not change.
	certExpiry time.Time
	history    Probes
}

// NewProbeStats returns the probe stats of a backend, probed or not, set
// up at now.
func NewProbeStats(probed bool, now time.Time) ProbeStats {
	if !probed {
		return ProbeStats{}
	}
	return ProbeStats{durations: NewDurations(now)}
}

// Clone is a copy of the stats for a backend that inherits them from the
// one it replaces: the histogram, safe for concurrent use, is shared, and
// nothing else is, since the two may be written at once, each under its
// own backend's mutex.
func (s *ProbeStats) Clone() ProbeStats {
	c := *s
	c.history = s.history.clone()
	return c
}

// Record adds one probe result. It does not allocate once the histogram
// has the result's native bucket.
func (s *ProbeStats) Record(r health.Result) {
	if s.durations != nil {
		s.durations.Observe(r.Duration.Seconds(), r.Time)
	}
	if !r.TLSCertExpiry.IsZero() {
		s.certExpiry = r.TLSCertExpiry
	}
	s.history.Add(r)
}

// Durations is the live histogram of the probe durations, not a copy; nil
// for a backend not probed.
func (s *ProbeStats) Durations() prometheus.Metric {
	if s.durations == nil {
		// A nil *Durations in the interface would not be nil.
		return nil
	}
	return s.durations
}

// CertExpiry is the earliest NotAfter of the certificate chain the last
// probe over TLS saw, zero until one did.
func (s *ProbeStats) CertExpiry() time.Time { return s.certExpiry }

// Records is the last probe results, oldest first.
func (s *ProbeStats) Records() []Probe { return s.history.Records() }

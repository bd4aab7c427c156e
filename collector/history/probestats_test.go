package history

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/probegate/probegate/collector/health"
)

// TestProbeStatsUnprobedHasNoHistogram: a backend that is not probed has no
// duration histogram, so that it exports no series for it.
func TestProbeStatsUnprobedHasNoHistogram(t *testing.T) {
	s := NewProbeStats(false, time.Time{})
	if s.Durations() != nil {
		t.Error("an unprobed backend has a probe duration histogram")
	}
	s.Record(health.StatusResult(200)) // must not panic without one
	if len(s.Records()) != 1 {
		t.Errorf("Records = %d, want 1", len(s.Records()))
	}
}

// TestProbeStatsRecord: every probe is observed in the histogram and kept
// in the records, and a probe without a certificate (it failed before the
// handshake) keeps the expiry the last one over TLS saw.
func TestProbeStatsRecord(t *testing.T) {
	s := NewProbeStats(true, time.Time{})
	expiry := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	withCert := health.StatusResult(200)
	withCert.Duration, withCert.TLSCertExpiry = 20*time.Millisecond, expiry
	s.Record(withCert)
	s.Record(health.StatusResult(503))
	if !s.CertExpiry().Equal(expiry) {
		t.Errorf("CertExpiry = %v, want %v kept", s.CertExpiry(), expiry)
	}
	var m dto.Metric
	if err := s.Durations().Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetHistogram().GetSampleCount(); got != 2 {
		t.Errorf("histogram holds %d probes, want 2", got)
	}
	if len(s.Records()) != 2 {
		t.Errorf("Records = %d, want 2", len(s.Records()))
	}
}

// TestProbeStatsCloneSharesNoRing: stats and their clone can be written
// at once, each under its own backend's mutex: the clone has answer slots
// of its own, holding the same answers.
func TestProbeStatsCloneSharesNoRing(t *testing.T) {
	s := NewProbeStats(true, time.Time{})
	s.Record(health.Result{Class: health.ClassOK, Status: "SERVING"})
	c := s.Clone()
	if c.history.statuses == s.history.statuses || *c.history.statuses != *s.history.statuses {
		t.Errorf("clone's answer slots %p %v, original's %p %v: want a copy of their own", c.history.statuses, *c.history.statuses, s.history.statuses, *s.history.statuses)
	}
	if c.durations != s.durations {
		t.Error("the clone has a histogram of its own, want the shared one")
	}
}

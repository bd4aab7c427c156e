package pool

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/history"
	"github.com/probegate/probegate/collector/outlier"
	"github.com/probegate/probegate/collector/passive"
	"github.com/probegate/probegate/collector/traffic"
)

// BackendSnapshot is a consistent copy of one backend at one moment. Its Health
// is the state machine's value, passive health's ejection in it; Served
// is what the backend is served as, overlays included, and Transitions
// counts the changes into each served state.
type BackendSnapshot struct {
	Name string
	URL  string
	// Group is the backend's replica group, its own name when it was
	// given none; Grouped says whether it was given one.
	Group        string
	Grouped      bool
	ProbePath    string
	ProbeEnabled bool
	// ProbeKind is the probe's kind and ProbeMatchesBody whether it
	// matches the body, which say which failure reasons it can have.
	ProbeKind        string
	ProbeMatchesBody bool
	Health           health.Health
	Served           health.Served
	// LastProbe is nil until the first probe finished.
	LastProbe   *health.Result
	Probes      uint64
	Failures    [health.NumReasons]uint64
	Refusals    uint64
	Transitions [health.NumServedStates]uint64
	Traffic     TrafficSnapshot
	// Since is the time of the last state change, zero before the first;
	// DownSince is when the current stretch out of service began (zero
	// when in service) and Downtime the total of the finished stretches.
	Since     time.Time
	DownSince time.Time
	Downtime  time.Duration
	// Maintenance is the backend's maintenance entry, nil when it has none.
	// While it is set, Served.Overlay is OverlayMaintenance.
	Maintenance *entries.Entry
	// ProbeDurations is the live histogram of the backend's probe
	// durations, not a copy; nil when the backend is not probed.
	ProbeDurations prometheus.Metric
	// TLSCertExpiry is the earliest NotAfter of the certificate chain the
	// last probe over TLS saw; zero for a backend not probed over TLS.
	TLSCertExpiry time.Time
	// History is the backend's last probe results, oldest first; only
	// the pool's SnapshotWithHistory fills it.
	History []history.Probe
	// Outlier is the backend's outlier detection state.
	Outlier outlier.Snapshot
	// Fleet is what shared probing says of the backend; nil while
	// shared probing is off.
	Fleet *FleetSnapshot
}

// TrafficSnapshot is a copy of what a backend keeps about real fan-out traffic.
type TrafficSnapshot struct {
	// Ejections counts passive-health ejections.
	Ejections uint64
	// Errors counts fan-out errors by reason, indexed by traffic.Reason.
	Errors [traffic.NumReasons]uint64
	// Window is what the passive-health window holds now; a snapshot of
	// the whole pool fills it while passive health is on.
	Window passive.Counts
}

// DowntimeAt is the total time the backend has spent out of service up to
// now, the current stretch included.
func (s *BackendSnapshot) DowntimeAt(now time.Time) time.Duration {
	return history.Downtime{DownSince: s.DownSince, Total: s.Downtime}.At(now)
}

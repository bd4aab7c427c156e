package pool

import (
	"net/http"
	"net/textproto"
	"slices"
	"sync"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/history"
	"github.com/probegate/probegate/collector/outlier"
	"github.com/probegate/probegate/collector/passive"
	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"
)

// Backend is one configured backend and its live health. Its identity
// (name, url, probe settings) is fixed; everything that changes is guarded
// by mu and read through Snapshot.
type Backend struct {
	Name string
	// URL is the base URL without a trailing slash.
	URL   string
	Probe config.HealthProbe
	// group is the replica group the backend was given, empty for none
	// (groups.go).
	group string
	// Client sends probes and fan-out requests; it never follows redirects.
	// Backends with the same client configuration share it.
	Client *http.Client

	// clientConfig is shared by the backends of one Apply that share
	// Client, whose settings it is: a copy each would cost every backend
	// some 300 bytes. Nil for a backend built outside a pool.
	clientConfig *config.HTTPClientConfig
	logger       log.Logger
	// pool is the pool that built the backend, whose clock, transition
	// log and pool-wide rules its inputs go through; nil for a backend
	// built outside a pool, which only keeps its own counts.
	pool *Pool

	mu          sync.Mutex
	health      health.Health
	last        health.Result
	probed      bool
	probes      uint64
	failures    [health.NumReasons]uint64
	refusals    uint64
	transitions [health.NumServedStates]uint64
	// trafficErrors counts fan-out errors by reason, passive health or
	// not; passive is passive health's window and ejections.
	trafficErrors [traffic.NumReasons]uint64
	passive       passive.State
	downtime      history.Downtime
	stats         history.ProbeStats
	// maintenance is set while an operator holds the backend out of
	// service; health keeps stepping underneath (maintenance.go).
	maintenance *entries.Entry
	// outlier is outlier detection's window and ejection (outlier.go);
	// an enforced ejection is an overlay like maintenance.
	outlier outlier.State
	// fleet is shared probing's part (fleet.go), nil while shared
	// probing is off.
	fleet *fleetState
}

func (b *Backend) thresholds() health.Thresholds {
	return health.Thresholds{Failures: b.Probe.Failures, Successes: b.Probe.Successes}
}

// Health is the backend's current state machine value: its probes'
// verdict, with passive health's ejection in it. What the backend is
// served as, overlays included, is Served.
func (b *Backend) Health() health.Health {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.machineLocked()
}

// Served is what the backend is served as now: its machine's state under
// maintenance or an ejection, if any holds it out.
func (b *Backend) Served() health.Served {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.servedLocked()
}

// RecordProbe feeds a probe result through the state machine, counts it
// and logs the state change it causes, if any. A result whose Cause is a
// fault of probegate's own is only counted, as local (localfault.go). It
// is the prober's way in, as Pool.RecordRound is the fan-out's. It does not
// allocate unless the state changes.
func (b *Backend) RecordProbe(r health.Result) {
	r, cause, local := health.LocalResult(r)
	if local {
		b.recordLocalProbe(r, cause)
		return
	}
	b.mu.Lock()
	before := b.servedLocked()
	from := b.machineLocked().State
	b.health = b.health.Step(r, b.thresholds())
	b.last = r
	b.probed = true
	newDissenter, ownChanged := b.stepOwnLocked(r, b.clock())
	to := b.machineLocked().State
	b.probes++
	b.stats.Record(r)
	switch r.Class {
	case health.ClassFailed:
		b.failures[r.Reason]++
	case health.ClassRefused:
		b.refusals++
	}
	// An overlay (maintenance, an outlier ejection) hides a change that
	// leaves what the backend is served as as it was.
	after := b.servedLocked()
	hidden := after.State() == before.State()
	if to != from && !hidden {
		b.noteProbeTransitionLocked(before, after, b.clock(), &r)
	}
	verified := b.machineLocked().Verified
	readmitted := b.outlierProbeLocked(r, b.clock())
	b.mu.Unlock()
	if readmitted {
		b.transitioned()
	}
	b.pool.noteFleet(b, newDissenter, ownChanged)
	switch {
	case to != from && hidden:
		b.logHiddenTransition(from, to, r)
	case to != from:
		b.logTransition(from, to, verified, r)
		b.transitioned()
	}
}

// logTransition logs one state change. It is called once per change, never
// per probe.
func (b *Backend) logTransition(from, to health.State, verified bool, r health.Result) {
	keyvals := []any{
		"backend", b.Name, "url", b.URL, "probe_path", b.Probe.Path,
		"from", from, "to", to, "verified", verified, "class", r.Class, "status", r.StatusCode,
	}
	if r.Reason != health.ReasonNone {
		keyvals = append(keyvals, "reason", r.Reason)
	}
	if r.Err != "" {
		keyvals = append(keyvals, "err", r.Err)
	}
	switch to {
	case health.StateProbeUnsupported:
		level.Warn(b.logger).Log(append([]any{"msg", "Probe path is refused; the backend stays in service unverified"}, keyvals...)...)
	case health.StateUnhealthy:
		level.Warn(b.logger).Log(append([]any{"msg", "Backend taken out of service"}, keyvals...)...)
	default:
		level.Info(b.logger).Log(append([]any{"msg", "Backend state changed"}, keyvals...)...)
	}
}

// Snapshot copies the backend's state.
func (b *Backend) Snapshot() BackendSnapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.snapshotLocked()
}

// snapshotLocked is Snapshot for a caller that holds b.mu.
func (b *Backend) snapshotLocked() BackendSnapshot {
	s := BackendSnapshot{
		Name:             b.Name,
		URL:              b.URL,
		Group:            b.Group(),
		Grouped:          b.Grouped(),
		ProbePath:        b.Probe.Path,
		ProbeEnabled:     b.Probe.Enabled,
		ProbeKind:        b.Probe.EffectiveKind(),
		ProbeMatchesBody: b.Probe.ExpectBodyRegexp != "",
		Health:           b.machineLocked(),
		Fleet:            b.fleetSnapshotLocked(),
		Served:           b.servedLocked(),
		Probes:           b.probes,
		Failures:         b.failures,
		Refusals:         b.refusals,
		Transitions:      b.transitions,
		Traffic:          TrafficSnapshot{Ejections: b.passive.Ejections(), Errors: b.trafficErrors},
		Since:            b.downtime.Since,
		DownSince:        b.downtime.DownSince,
		Downtime:         b.downtime.Total,

		ProbeDurations: b.stats.Durations(),
		TLSCertExpiry:  b.stats.CertExpiry(),
		Outlier:        b.outlier.Snapshot(),
	}
	if b.probed {
		last := b.last
		s.LastProbe = &last
	}
	if b.maintenance != nil {
		m := *b.maintenance
		s.Maintenance = &m
	}
	return s
}

// SameIdentity reports whether a reload may keep this backend's state:
// its url and probe settings are unchanged.
func (b *Backend) SameIdentity(o *Backend) bool {
	return b.Name == o.Name && b.URL == o.URL && b.Probe.Equal(o.Probe)
}

// ClientConfig is the http_client_config the backend was built with;
// probe kinds that do not speak HTTP take their TLS settings from it.
func (b *Backend) ClientConfig() config.HTTPClientConfig {
	if b.clientConfig == nil {
		return config.HTTPClientConfig{}
	}
	return *b.clientConfig
}

// inheritLocked copies the live state of a backend whose client settings
// changed but whose identity did not. The windows are copied, not shared:
// a probe or round in flight may still write prev under prev.mu while b
// is written under b.mu. The caller holds prev.mu.
func (b *Backend) inheritLocked(prev *Backend) {
	b.health, b.last, b.probed = prev.health, prev.last, prev.probed
	b.probes, b.failures, b.refusals = prev.probes, prev.failures, prev.refusals
	b.transitions, b.trafficErrors, b.passive = prev.transitions, prev.trafficErrors, prev.passive.Clone()
	b.downtime = prev.downtime
	b.stats = prev.stats.Clone()
	b.maintenance = prev.maintenance
	b.outlier = prev.outlier.Clone()
	if prev.fleet != nil {
		f := *prev.fleet
		f.vantagePoints, f.peers, f.scratch = slices.Clone(f.vantagePoints), slices.Clone(f.peers), slices.Clone(f.scratch)
		b.fleet = &f
	}
}

// Authenticates reports whether the backend's client configuration sends
// credentials of its own. A client's Authorization header must never reach
// such a backend: prometheus/common's credential layers leave a request
// that already carries one alone, so the client's would win.
func (b *Backend) Authenticates() bool {
	c := b.ClientConfig()
	if c.BasicAuth != nil || c.Authorization != nil || c.OAuth2 != nil || c.BearerToken != "" || c.BearerTokenFile != "" {
		return true
	}
	if c.HTTPHeaders != nil {
		for name := range c.HTTPHeaders.Headers {
			if textproto.CanonicalMIMEHeaderKey(name) == "Authorization" {
				return true
			}
		}
	}
	return false
}

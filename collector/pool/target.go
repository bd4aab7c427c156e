package pool

import (
	"github.com/probegate/probegate/config"
)

// Target is one backend as its source describes it: the static list of the
// configuration file or a service discovery mechanism. It is what the pool
// is built from; the pool adds the live health.
type Target struct {
	// Name identifies the backend in metrics, logs and the API.
	Name string
	// URL is the base URL; a trailing slash is ignored.
	URL string
	// Group is the replica group the backend belongs to; empty, it is a
	// group of its own (config.GroupOf).
	Group string
	// Probe is the effective health_probe block of this backend.
	Probe config.HealthProbe
	// ClientConfig is the effective http_client_config of this backend.
	ClientConfig config.HTTPClientConfig
}

// Settings are the pool-wide rules over the backends.
type Settings struct {
	// PanicThreshold is the in-service percentage of configured backends
	// below which every backend is selected (fail-open).
	PanicThreshold float64
	// Readiness is the pool's budget and, in its PerGroup, each replica
	// group's.
	Readiness config.Readiness
	// Passive is passive health: ejecting backends that fail real traffic.
	Passive config.PassiveHealth
	// Outlier is outlier detection over the fan-out's rounds; it is on
	// only when the fan-out is too.
	Outlier config.OutlierDetection
	// Fanout is whether the fan-out endpoint is enabled, so that its series
	// exist only then.
	Fanout bool
}

// SettingsOf are the pool settings of a configuration.
func SettingsOf(cfg *config.Config) Settings {
	outlier := cfg.Fanout.OutlierDetection
	outlier.Enabled = outlier.Enabled && cfg.Fanout.Enabled
	return Settings{PanicThreshold: cfg.Pool.PanicThreshold, Readiness: cfg.Readiness, Passive: cfg.PassiveHealth,
		Outlier: outlier, Fanout: cfg.Fanout.Enabled}
}

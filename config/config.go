// Package config is probegate's YAML configuration: its types, defaults and
// validation. Errors name the file, line and field.
package config

import (
	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
)

// Config is the whole configuration file.
type Config struct {
	HealthProbe      HealthProbe      `yaml:"health_probe"`
	Pool             Pool             `yaml:"pool"`
	Readiness        Readiness        `yaml:"readiness"`
	Gate             Gate             `yaml:"gate"`
	Fanout           Fanout           `yaml:"fanout"`
	PassiveHealth    PassiveHealth    `yaml:"passive_health"`
	HTTPClientConfig HTTPClientConfig `yaml:"http_client_config"`
	Backends         []Backend        `yaml:"backends"`
}

// HealthProbe is how a backend is probed.
type HealthProbe struct {
	Enabled   bool           `yaml:"enabled"`
	Path      string         `yaml:"path"`
	Interval  model.Duration `yaml:"interval"`
	Timeout   model.Duration `yaml:"timeout"`
	Failures  int            `yaml:"failures"`
	Successes int            `yaml:"successes"`
}

// HealthProbeOverride is a backend's own health_probe block: every key it
// sets replaces the top-level default.
type HealthProbeOverride struct {
	Enabled   *bool           `yaml:"enabled"`
	Path      *string         `yaml:"path"`
	Interval  *model.Duration `yaml:"interval"`
	Timeout   *model.Duration `yaml:"timeout"`
	Failures  *int            `yaml:"failures"`
	Successes *int            `yaml:"successes"`
}

// Pool holds pool-wide selection settings.
type Pool struct {
	// PanicThreshold is the in-service percentage of configured backends
	// below which every backend is selected (fail-open).
	PanicThreshold float64 `yaml:"panic_threshold"`
}

// Readiness is the PodDisruptionBudget-style budget over the pool. At most
// one of the two is set; neither means min_available 1.
type Readiness struct {
	MinAvailable   *IntOrPercent `yaml:"min_available"`
	MaxUnavailable *IntOrPercent `yaml:"max_unavailable"`
}

// IntOrPercent is an integer or "N%", as in Kubernetes.
type IntOrPercent struct {
	Value   int
	Percent bool
}

// Gate holds the readiness gate's timings.
type Gate struct {
	Drain           model.Duration `yaml:"drain"`
	ShutdownTimeout model.Duration `yaml:"shutdown_timeout"`
	CheckInterval   model.Duration `yaml:"check_interval"`
}

// Fanout holds the fan-out endpoint's settings.
type Fanout struct {
	Timeout          model.Duration `yaml:"timeout"`
	Merge            string         `yaml:"merge"`
	MaxRequestBytes  Bytes          `yaml:"max_request_bytes"`
	MaxResponseBytes Bytes          `yaml:"max_response_bytes"`
}

// Bytes is a size such as 1MiB or 64MiB (or a plain number of bytes).
type Bytes int64

// PassiveHealth holds the outlier detection from real fan-out traffic.
type PassiveHealth struct {
	Enabled           bool           `yaml:"enabled"`
	Window            model.Duration `yaml:"window"`
	MaxFailures       int            `yaml:"max_failures"`
	MinSuccessRatio   float64        `yaml:"min_success_ratio"`
	MinRequests       int            `yaml:"min_requests"`
	MaxEjectedPercent float64        `yaml:"max_ejected_percent"`
}

// Backend is one configured backend.
type Backend struct {
	Name        string              `yaml:"name"`
	URL         string              `yaml:"url"`
	HealthProbe HealthProbeOverride `yaml:"health_probe"`
	// HTTPClientConfig, when set, replaces the top-level one for this backend.
	HTTPClientConfig *HTTPClientConfig `yaml:"http_client_config"`
}

// HTTPClientConfig is the Prometheus ecosystem's HTTP client block (TLS,
// basic auth, authorization, proxy, headers), used for probes and fan-out.
type HTTPClientConfig = commoncfg.HTTPClientConfig

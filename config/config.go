// Package config is probegate's YAML configuration: its types, defaults and
// validation. Errors name the file, line and field.
package config

import (
	"time"

	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/discovery/dns"
	"github.com/prometheus/prometheus/discovery/file"
	"github.com/prometheus/prometheus/model/relabel"
)

// Config is the whole configuration file.
type Config struct {
	HealthProbe      HealthProbe      `yaml:"health_probe"`
	Pool             Pool             `yaml:"pool"`
	Readiness        Readiness        `yaml:"readiness"`
	Gate             Gate             `yaml:"gate"`
	Fanout           Fanout           `yaml:"fanout"`
	PassiveHealth    PassiveHealth    `yaml:"passive_health"`
	Maintenance      Maintenance      `yaml:"maintenance"`
	Probing          Probing          `yaml:"probing"`
	HTTPClientConfig HTTPClientConfig `yaml:"http_client_config"`
	Backends         []Backend        `yaml:"backends"`

	// Service discovery, with the keys and meaning of a Prometheus scrape
	// config: each target left after relabelling is a backend too.
	FileSDConfigs  []*file.SDConfig  `yaml:"file_sd_configs,omitempty"`
	DNSSDConfigs   []*dns.SDConfig   `yaml:"dns_sd_configs,omitempty"`
	RelabelConfigs []*relabel.Config `yaml:"relabel_configs,omitempty"`
	// MaxDiscoveredBackends bounds the backends one discovery mechanism
	// yields: a source that lists more cannot grow the pool, its probes
	// and its series without end.
	MaxDiscoveredBackends int `yaml:"max_discovered_backends"`

	// src is the file the configuration was decoded from, kept so that
	// Validate can name the line of every problem; nil when built in code.
	src *source
	// origins maps a field path to the flag or environment variable that
	// set it, so that Validate blames the flag rather than the file.
	origins map[string]string
}

// Default is the documented configuration with no backends: what
// an empty file means.
func Default() *Config {
	return &Config{
		HealthProbe: HealthProbe{
			Enabled:   true,
			Path:      "/healthz",
			Interval:  model.Duration(5 * time.Second),
			Timeout:   model.Duration(2 * time.Second),
			Failures:  3,
			Successes: 2,
			Kind:      KindHTTP,
			Method:    "GET",
			KeepAlive: new(true),
		},
		Pool: Pool{PanicThreshold: 0},
		Gate: Gate{
			Drain:           0,
			ShutdownTimeout: model.Duration(30 * time.Second),
			CheckInterval:   model.Duration(time.Second),
		},
		Fanout: Fanout{
			Enabled:               false,
			Timeout:               model.Duration(30 * time.Second),
			Merge:                 DefaultMerge,
			MaxRequestBytes:       1 << 20,
			RequestReadTimeout:    model.Duration(10 * time.Second),
			MaxResponseBytes:      64 << 20,
			ForwardHeaders:        DefaultForwardHeaders(),
			MaxRequestHeaderBytes: 16 << 10,
			MaxConcurrent:         256,
			MinContributors:       IntOrPercent{Value: 1},
			MaxHops:               3,
			MaxBufferedBytes:      256 << 20,
			OutlierDetection:      DefaultOutlierDetection(),
			Stragglers:            DefaultStragglers(),
			Hedge:                 DefaultHedge(),
			Failover:              true,
		},
		PassiveHealth: PassiveHealth{
			Enabled:           false,
			Window:            model.Duration(30 * time.Second),
			MaxFailures:       5,
			MinSuccessRatio:   0,
			MinRequests:       10,
			MaxEjectedPercent: 50,
		},
		Maintenance:           defaultMaintenance(),
		Probing:               DefaultProbing(),
		HTTPClientConfig:      commoncfg.DefaultHTTPClientConfig,
		MaxDiscoveredBackends: defaultMaxDiscoveredBackends,
	}
}

// defaultMaxDiscoveredBackends is max_discovered_backends when not set.
const defaultMaxDiscoveredBackends = 10000

// HealthProbe is how a backend is probed.
type HealthProbe struct {
	Enabled   bool           `yaml:"enabled"`
	Path      string         `yaml:"path"`
	Interval  model.Duration `yaml:"interval"`
	Timeout   model.Duration `yaml:"timeout"`
	Failures  int            `yaml:"failures"`
	Successes int            `yaml:"successes"`
	// Kind is how the backend is probed: one of Kinds(). The keys below
	// apply to some kinds only (kindKeys, and docs/design.md, "Probe
	// kinds").
	Kind string `yaml:"kind"`
	// Method is the HTTP probe's method, GET or HEAD.
	Method string `yaml:"method"`
	// Headers are set on every HTTP probe request; "Host" sets the
	// request's host. A backend's headers replace the top-level ones as a
	// whole, as every other key does.
	Headers map[string]string `yaml:"headers,omitempty"`
	// ExpectBodyRegexp, when not empty, must match the first 64 KiB of the
	// body of an HTTP probe whose status is ok.
	ExpectBodyRegexp string `yaml:"expect_body_regexp,omitempty"`
	// GRPCService is the service name a gRPC probe asks the health
	// service about; "" is the server as a whole.
	GRPCService string `yaml:"grpc_service,omitempty"`
	// KeepAlive, when false, makes every HTTP probe open a connection of
	// its own and close it after the answer, as HAProxy's checks do. nil
	// (a HealthProbe built in code) keeps connections alive; read it
	// through KeepsAlive.
	KeepAlive *bool `yaml:"keep_alive,omitempty"`
}

// HealthProbeOverride is a backend's own health_probe block: the keys it
// sets, which replace the top-level ones, with their values. Its keys are
// HealthProbe's, declared there once; decoding records which of them the
// block holds.
type HealthProbeOverride struct {
	// Values holds the value of every key the block sets; the other
	// fields are zero and mean nothing.
	Values HealthProbe `yaml:",inline"`
	// set has bit i for the key of field i of HealthProbe.
	set uint64
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
	MinAvailable   *IntOrPercent `yaml:"min_available,omitempty"`
	MaxUnavailable *IntOrPercent `yaml:"max_unavailable,omitempty"`
	// PeerRelative keeps this replica ready while its budget does not
	// hold if no live peer's budget holds either: withdrawing every
	// replica at once would hide the answers that explain the outage.
	PeerRelative bool `yaml:"peer_relative,omitempty"`
	// PerGroup is the budget inside every replica group of two or more
	// backends; off unless one of its keys is set.
	PerGroup GroupBudget `yaml:"per_group,omitempty"`
}

// GroupBudget is the PodDisruptionBudget-style budget of one replica
// group, its percentages taken of the group's replicas. At most one of
// the two is set; neither means no budget.
type GroupBudget struct {
	MinAvailable   *IntOrPercent `yaml:"min_available,omitempty"`
	MaxUnavailable *IntOrPercent `yaml:"max_unavailable,omitempty"`
}

// Set reports whether the group budget is on.
func (g GroupBudget) Set() bool { return g.MinAvailable != nil || g.MaxUnavailable != nil }

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
	// Enabled serves /fanout/; off by default, since the fan-out forwards
	// client requests with probegate's own backend credentials.
	Enabled         bool           `yaml:"enabled"`
	Timeout         model.Duration `yaml:"timeout"`
	Merge           string         `yaml:"merge"`
	MaxRequestBytes Bytes          `yaml:"max_request_bytes"`
	// RequestReadTimeout bounds reading a request's body, which happens
	// before its round takes one of max_concurrent slots: a client sending
	// slowly holds no slot, and is answered 408 after it.
	RequestReadTimeout model.Duration `yaml:"request_read_timeout"`
	MaxResponseBytes   Bytes          `yaml:"max_response_bytes"`
	// ForwardHeaders names the client request headers sent on to the
	// backends; no other client header is.
	ForwardHeaders []string `yaml:"forward_headers"`
	// MaxRequestHeaderBytes bounds the forwarded headers' total size.
	MaxRequestHeaderBytes Bytes `yaml:"max_request_header_bytes"`
	// MaxConcurrent bounds the rounds in flight at once.
	MaxConcurrent int `yaml:"max_concurrent"`
	// MinContributors is the quorum: a round with fewer contributions
	// answers 503. A percentage is of the configured backends, rounded up.
	MinContributors IntOrPercent `yaml:"min_contributors"`
	// ExposeMissing adds X-Backends-Missing, each missing backend and why,
	// to every answer.
	ExposeMissing bool `yaml:"expose_missing"`
	// MaxHops is how many probegates a request may have passed through
	// (counted in its Via) before one refuses it as a loop.
	MaxHops int `yaml:"max_hops"`
	// MaxBufferedBytes bounds the answer buffers of all rounds in flight
	// together.
	MaxBufferedBytes Bytes `yaml:"max_buffered_bytes"`
	// OutlierDetection ejects a backend that does much worse than its
	// peers in the same rounds.
	OutlierDetection OutlierDetection `yaml:"outlier_detection"`
	// Stragglers lets a round answer without the backends its peers
	// outrun.
	Stragglers Stragglers `yaml:"stragglers"`
	// Hedge asks a sibling of a replica group's chosen replica when that
	// one is late.
	Hedge Hedge `yaml:"hedge"`
	// Failover asks a sibling at once when a group's replica fails before
	// its answer starts (transport error, 5xx, 429).
	Failover bool `yaml:"failover"`
}

// OutlierDetection judges each backend against the median of its peers
// over the fan-out rounds of one window.
type OutlierDetection struct {
	Enabled bool `yaml:"enabled"`
	// Enforcing false is a dry run: what would be ejected is counted and
	// logged, and nothing changes.
	Enforcing bool           `yaml:"enforcing"`
	Window    model.Duration `yaml:"window"`
	// MinRounds is how many rounds a backend needs in the window before it
	// is judged or serves as a peer.
	MinRounds int `yaml:"min_rounds"`
	// FailureGap ejects a backend whose failure ratio exceeds its peers'
	// median by more than this.
	FailureGap float64 `yaml:"failure_gap"`
	// LatencyFactor and LatencyFloor eject a backend whose p90 latency
	// exceeds both LatencyFactor times its peers' median p90 and the floor.
	LatencyFactor float64        `yaml:"latency_factor"`
	LatencyFloor  model.Duration `yaml:"latency_floor"`
	// BaseEjection times the backend's consecutive ejections, capped at
	// MaxEjection, is how long an ejection lasts.
	BaseEjection model.Duration `yaml:"base_ejection"`
	MaxEjection  model.Duration `yaml:"max_ejection"`
}

// DefaultOutlierDetection is the outlier_detection block an empty one
// means: off, enforcing once enabled.
func DefaultOutlierDetection() OutlierDetection {
	return OutlierDetection{
		Enabled:       false,
		Enforcing:     true,
		Window:        model.Duration(30 * time.Second),
		MinRounds:     20,
		FailureGap:    0.5,
		LatencyFactor: 3,
		LatencyFloor:  model.Duration(50 * time.Millisecond),
		BaseEjection:  model.Duration(30 * time.Second),
		MaxEjection:   model.Duration(5 * time.Minute),
	}
}

// DefaultForwardHeaders are the client headers a fan-out forwards unless
// fanout.forward_headers says otherwise: content negotiation, the client's
// name and request tracing, nothing that carries a credential.
func DefaultForwardHeaders() []string {
	return []string{"Accept", "Accept-Language", "Content-Type", "User-Agent", "X-Request-Id", "Traceparent", "Tracestate"}
}

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
	Name string `yaml:"name"`
	URL  string `yaml:"url"`
	// Group names the replicas of the same data: a fan-out round asks one
	// of them, and readiness.per_group budgets them together. A backend
	// without one is a group of its own.
	Group       string              `yaml:"group,omitempty"`
	HealthProbe HealthProbeOverride `yaml:"health_probe,omitempty"`
	// HTTPClientConfig, when set, replaces the top-level one for this backend.
	HTTPClientConfig *HTTPClientConfig `yaml:"http_client_config,omitempty"`

	// origin is the flag that added the backend, if one did; it travels
	// with the backend however the list is reordered.
	origin string
}

// GroupOf is the replica group of a backend named name whose group key
// is group: the group, or the backend's name alone when it has none.
func GroupOf(name, group string) string {
	if group != "" {
		return group
	}
	return name
}

// HTTPClientConfig is the Prometheus ecosystem's HTTP client block (TLS,
// basic auth, authorization, proxy, headers), used for probes and fan-out.
type HTTPClientConfig = commoncfg.HTTPClientConfig

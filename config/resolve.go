package config

import (
	"reflect"

	commoncfg "github.com/prometheus/common/config"
)

// ProbeFor is the health_probe block in force for a backend: the top-level
// defaults with every key the backend sets replaced.
func (c *Config) ProbeFor(b Backend) HealthProbe {
	p := c.HealthProbe
	o := b.HealthProbe
	if o.Enabled != nil {
		p.Enabled = *o.Enabled
	}
	if o.Path != nil {
		p.Path = *o.Path
	}
	if o.Interval != nil {
		p.Interval = *o.Interval
	}
	if o.Timeout != nil {
		p.Timeout = *o.Timeout
	}
	if o.Failures != nil {
		p.Failures = *o.Failures
	}
	if o.Successes != nil {
		p.Successes = *o.Successes
	}
	p.overrideKinds(o)
	return p
}

// ClientConfigFor is the http_client_config in force for a backend. A
// backend's own block replaces the top-level one as a whole, as a scrape
// job's does in Prometheus; an empty block (`http_client_config: {}`, the
// example in the documentation) sets nothing and so inherits the top-level
// one rather than silently dropping its TLS and credentials.
func (c *Config) ClientConfigFor(b Backend) HTTPClientConfig {
	if b.HTTPClientConfig != nil && !reflect.DeepEqual(*b.HTTPClientConfig, commoncfg.DefaultHTTPClientConfig) {
		return *b.HTTPClientConfig
	}
	return c.HTTPClientConfig
}

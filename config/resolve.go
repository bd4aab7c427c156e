package config

import (
	"reflect"

	commoncfg "github.com/prometheus/common/config"
)

// ProbeFor is the health_probe block in force for a backend: the top-level
// one with every key the backend sets replaced. A backend's headers
// replace the top-level ones as a whole.
func (c *Config) ProbeFor(b Backend) HealthProbe {
	p := c.HealthProbe
	b.HealthProbe.applyTo(&p)
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

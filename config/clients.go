package config

import (
	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/config/internal/yamlpos"
)

// CheckHTTPClients builds every HTTP client the configuration describes
// (the top-level one and each backend's own), which reads the CA,
// certificate and key files they name. Validate does not, since a file may
// legitimately appear between start-up and the first probe; check-config
// does, so that a typo in a path is found before deployment.
func (c *Config) CheckHTTPClients() error {
	v := &validator{c: c}
	check := func(field string, hc HTTPClientConfig) {
		if _, err := commoncfg.NewClientFromConfig(hc, "probegate_check"); err != nil {
			v.add(field, "%v", err)
		}
	}
	check("http_client_config", c.HTTPClientConfig)
	for i, b := range c.Backends {
		if b.HTTPClientConfig != nil {
			check(yamlpos.Index("backends", i)+".http_client_config", *b.HTTPClientConfig)
		}
	}
	return v.err()
}

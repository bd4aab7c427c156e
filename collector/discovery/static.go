// Package discovery turns the sources of backends into the pool's targets.
// The configuration file's backends list is the static source; every
// other source (file or DNS service discovery) is a file of its own here
// and yields the same Target.
package discovery

import (
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// Static returns the backends the configuration lists, in its order, each
// with its effective probe settings and client configuration.
func Static(cfg *config.Config) []pool.Target {
	targets := make([]pool.Target, len(cfg.Backends))
	for i, b := range cfg.Backends {
		targets[i] = pool.Target{
			Name:         b.Name,
			URL:          b.URL,
			Group:        b.Group,
			Probe:        cfg.ProbeFor(b),
			ClientConfig: cfg.ClientConfigFor(b),
		}
	}
	return targets
}

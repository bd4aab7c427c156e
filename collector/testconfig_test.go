package collector

import (
	"fmt"
	"time"

	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/config"
)

// testConfig is a configuration with the default thresholds 3/2, a 1s
// interval and timeout, the /healthz probe path, and the given backends.
func testConfig(backends ...config.Backend) *config.Config {
	return &config.Config{
		HealthProbe: config.HealthProbe{
			Enabled: true, Path: "/healthz", Interval: model.Duration(time.Second),
			Timeout: model.Duration(time.Second), Failures: 3, Successes: 2,
		},
		Backends: backends,
	}
}

// namedBackends are backends with the given names on loopback ports where
// nothing listens, 19001 upwards, for tests that feed results by hand.
func namedBackends(names ...string) []config.Backend {
	backends := make([]config.Backend, len(names))
	for i, name := range names {
		backends[i] = config.Backend{Name: name, URL: fmt.Sprintf("http://127.0.0.1:%d", 19001+i)}
	}
	return backends
}

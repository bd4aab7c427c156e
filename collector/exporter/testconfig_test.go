package exporter

import (
	"fmt"

	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/testconfig"
)

// testConfig is the shared test configuration with the given backends.
func testConfig(backends ...config.Backend) *config.Config {
	return testconfig.New(backends...)
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

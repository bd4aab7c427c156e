// Package testconfig is the configuration the collector packages' tests
// share: one set of probe settings, so that a test reads the same
// thresholds and timings whichever package it is in.
package testconfig

import (
	"time"

	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/config"
)

// Probe is the tests' health_probe block: the /healthz path, a 1s interval
// and timeout, and the default thresholds, 3 failures and 2 successes.
func Probe() config.HealthProbe {
	return config.HealthProbe{
		Enabled: true, Path: "/healthz", Interval: model.Duration(time.Second),
		Timeout: model.Duration(time.Second), Failures: 3, Successes: 2,
	}
}

// New is a configuration with Probe and the given backends; everything
// else is left zero, as a test builds it.
func New(backends ...config.Backend) *config.Config {
	return &config.Config{HealthProbe: Probe(), Backends: backends}
}

package main

import (
	"io"
	"net"
	"os"

	"github.com/go-kit/log/level"

	"github.com/probegate/probegate/cmd/probegate/internal/demo"
	"github.com/probegate/probegate/cmd/probegate/internal/logging"
	"github.com/probegate/probegate/cmd/probegate/internal/termsafe"
	"github.com/probegate/probegate/config"
)

// runDemo starts the demo's loopback backends and serves probegate against
// them with a 1s probe interval: the one-command tour.
func runDemo(opts *options, stdout, stderr io.Writer) int {
	logger, err := logging.New(opts.LogLevel, opts.LogFormat, stderr)
	if err != nil {
		termsafe.Fprintf(stderr, "probegate: %v\n", err)
		return 2
	}
	cfg := demo.Config(opts.overrides.Apply)
	world, err := demo.Start(cfg)
	if err != nil {
		level.Error(logger).Log("msg", "Cannot start the demo backends", "err", err)
		return 1
	}
	defer world.Stop()
	if err := cfg.Validate(); err != nil {
		level.Error(logger).Log("msg", "Invalid demo configuration", "err", err)
		return 1
	}
	cleanup, err := demoMaintenance(opts)
	if err != nil {
		level.Error(logger).Log("msg", "Cannot create the demo's storage directory", "err", err)
		return 1
	}
	defer cleanup()
	listeners, err := opts.openListeners()
	if err != nil {
		level.Error(logger).Log("msg", "Cannot listen", "err", err)
		return 1
	}
	defer listeners.close()
	// A reload in the demo has no file to read: it re-applies the demo pool.
	judge := func([]net.Addr) (*config.Config, []config.Problem, error) { return cfg, nil, nil }
	announce := func() {
		world.PrintBanner(stdout, opts.ListenAddresses[0], opts.AdminListenAddress, opts.TelemetryPath, os.Args[0])
	}
	return runServer(opts, logger, cfg, listeners, judge, announce)
}

// demoMaintenance has the demo show maintenance: the admin API is on, for
// loopback clients only, and its state lives in a temporary directory
// unless --storage.path names one. cleanup removes the directory.
func demoMaintenance(opts *options) (cleanup func(), err error) {
	opts.EnableAdminAPI = true
	opts.adminLoopbackOnly = true
	if opts.storagePath.Given() {
		return func() {}, nil
	}
	dir, err := os.MkdirTemp("", "probegate-demo-")
	if err != nil {
		return nil, err
	}
	if err := opts.storagePath.Set(dir); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return func() { os.RemoveAll(dir) }, nil
}

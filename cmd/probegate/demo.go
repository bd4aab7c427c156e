package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/go-kit/log/level"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/config"
)

// demo starts the built-in loopback backends and serves probegate against
// them with a 1s probe interval: the one-command tour.
func demo(opts *options, stdout, stderr io.Writer) int {
	logger, err := newLogger(opts.LogLevel, opts.LogFormat, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "probegate: %v\n", err)
		return 2
	}
	const demoTimeout = model.Duration(500 * time.Millisecond)
	cfg := config.Default()
	cfg.HealthProbe.Interval = model.Duration(time.Second)
	cfg.HealthProbe.Timeout = demoTimeout
	cfg.Fanout.Timeout = model.Duration(5 * time.Second)
	// The tour shows the fan-out, which is otherwise off until enabled,
	// and outlier detection over its rounds.
	cfg.Fanout.Enabled = true
	cfg.Fanout.OutlierDetection.Enabled = true
	opts.applyOverrides(cfg)
	if cfg.HealthProbe.Timeout == demoTimeout {
		// The demo's own timeout yields to a shorter --health-probe.interval.
		cfg.HealthProbe.Timeout = min(demoTimeout, cfg.HealthProbe.Interval)
	}
	backends, stories, stop, err := startDemoBackends(cfg.HealthProbe.Path)
	if err != nil {
		level.Error(logger).Log("msg", "Cannot start the demo backends", "err", err)
		return 1
	}
	defer stop()
	cfg.Backends = append(backends, cfg.Backends...)
	sd, sdConfig, err := startDemoDiscovery(cfg.HealthProbe.Path)
	if err != nil {
		level.Error(logger).Log("msg", "Cannot start the demo service discovery", "err", err)
		return 1
	}
	defer sd.stop()
	cfg.FileSDConfigs = append(cfg.FileSDConfigs, sdConfig)
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
	// A reload in the demo has no file to read: it re-applies the demo pool.
	load := func() (*config.Config, error) { return cfg, nil }
	announce := func() {
		printDemoBanner(stdout, opts.listenAddresses(), opts.TelemetryPath, cfg, stories, sd.listed)
		sd.printBanner(stdout)
	}
	return runServer(opts, logger, cfg, load, announce)
}

// printDemoBanner tells the operator what to open. The demo's own
// backends are those with a story; discovered is how many its discovery
// file lists at a time; the rest came from --backend.
func printDemoBanner(w io.Writer, listen []string, telemetryPath string, cfg *config.Config, stories map[string]string, discovered int) {
	base := "http://" + browsable(listen[0])
	var b strings.Builder
	fmt.Fprintf(&b, "\nprobegate demo: %d backends (%d listed and %d discovered on loopback", len(cfg.Backends)+discovered, len(stories), discovered)
	if extra := len(cfg.Backends) - len(stories); extra > 0 {
		fmt.Fprintf(&b, ", %d from --backend", extra)
	}
	fmt.Fprintf(&b, "), probed every %s on %s\n\n", cfg.HealthProbe.Interval, cfg.HealthProbe.Path)
	names := make([]string, 0, len(cfg.Backends))
	urls := map[string]string{}
	for _, be := range cfg.Backends {
		names = append(names, be.Name)
		urls[be.Name] = be.URL
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "  %-15s %-24s %s\n", n, urls[n], stories[n])
	}
	fmt.Fprintf(&b, "\nEvery backend starts unknown (in service, not yet probed); within a few seconds each\nreaches its state. Open:\n")
	fmt.Fprintf(&b, "  %s/status          the status page: every backend, the budget, the last fan-out round\n", base)
	fmt.Fprintf(&b, "  %s/healthz         every backend: state, in_service, reachable, verified\n", base)
	fmt.Fprintf(&b, "  %s Prometheus metrics (probegate_backend_state ...)\n", padRight(base+telemetryPath, len(base)+16))
	fmt.Fprintf(&b, "  %s/ready           readiness with the pool budget (/health for liveness)\n", base)
	fmt.Fprintf(&b, "\nA fan-out round that skips the down backends; X-Backends shows it was partial:\n")
	fmt.Fprintf(&b, "  curl -si %s/fanout%s\n", base, demoQueryPath)
	printDemoMaintenance(&b, base, os.Args[0])
	fmt.Fprintf(&b, "\nCtrl-C drains and stops.\n\n")
	io.WriteString(w, b.String())
}

// browsable turns a listen address such as ":9797" into one a browser opens.
func browsable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

func padRight(s string, width int) string {
	if len(s) >= width {
		return s
	}
	return s + strings.Repeat(" ", width-len(s))
}

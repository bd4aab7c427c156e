// Package demo is the loopback world of `probegate demo`: backends in
// every state a probe can find, one of them over TLS, a discovery file
// that swaps the backend it lists, and the banner that says what to open.
// The command serves probegate against it as it would against a real
// pool; nothing here is used outside the tour.
package demo

import (
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/config"
)

// tourTimeout is the demo's probe timeout: half its 1s interval.
const tourTimeout = model.Duration(500 * time.Millisecond)

// Config is the tour's configuration before its backends join: the
// defaults with a 1s probe interval, and the fan-out and outlier detection
// on, which are otherwise off until enabled. override applies the
// operator's flags; the demo's own timeout then yields to a shorter
// --health-probe.interval.
func Config(override func(*config.Config)) *config.Config {
	cfg := config.Default()
	cfg.HealthProbe.Interval = model.Duration(time.Second)
	cfg.HealthProbe.Timeout = tourTimeout
	cfg.Fanout.Timeout = model.Duration(5 * time.Second)
	cfg.Fanout.Enabled = true
	cfg.Fanout.OutlierDetection.Enabled = true
	override(cfg)
	if cfg.HealthProbe.Timeout == tourTimeout {
		cfg.HealthProbe.Timeout = min(tourTimeout, cfg.HealthProbe.Interval)
	}
	return cfg
}

// Demo is the running loopback world of the tour.
type Demo struct {
	cfg     *config.Config
	stories map[string]string
	sd      *discovery
	stop    func()
}

// Start starts the demo backends and the discovery file that lists its
// other backends in turn, all for cfg's probe path, and adds them to cfg:
// the demo's backends before those cfg has (from --backend), and the
// file_sd block that reads the file. Stop shuts everything down.
func Start(cfg *config.Config) (*Demo, error) {
	backends, stories, stop, err := startBackends(cfg.HealthProbe.Path)
	if err != nil {
		return nil, err
	}
	sd, sdConfig, err := startDiscovery(cfg.HealthProbe.Path)
	if err != nil {
		stop()
		return nil, fmt.Errorf("demo service discovery: %w", err)
	}
	cfg.Backends = append(backends, cfg.Backends...)
	cfg.FileSDConfigs = append(cfg.FileSDConfigs, sdConfig)
	return &Demo{cfg: cfg, stories: stories, sd: sd, stop: func() { sd.stop(); stop() }}, nil
}

// Stop shuts the demo backends down and removes the discovery file.
func (d *Demo) Stop() { d.stop() }

// PrintBanner tells the operator what to open, for probegate listening on
// listen, with its admin listener on admin (empty: off), and serving its
// metrics at telemetryPath. self is the command the binary was run as, so
// that the maintenance hint works as printed.
func (d *Demo) PrintBanner(w io.Writer, listen, admin, telemetryPath, self string) {
	printBanner(w, listen, admin, telemetryPath, self, d.cfg, d.stories, d.sd.listed)
	d.sd.printBanner(w)
}

// printBanner tells the operator what to open. The demo's own backends
// are those with a story; discovered is how many its discovery file lists
// at a time; the rest came from --backend.
func printBanner(w io.Writer, listen, admin, telemetryPath, self string, cfg *config.Config, stories map[string]string, discovered int) {
	base := "http://" + browsable(listen)
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
	fmt.Fprintf(&b, "  curl -si %s/fanout%s\n", base, queryPath)
	if admin != "" {
		printMaintenance(&b, "http://"+browsable(admin), self)
	}
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

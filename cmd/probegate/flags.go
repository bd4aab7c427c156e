package main

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/model"
	toolkitweb "github.com/prometheus/exporter-toolkit/web"

	"github.com/probegate/probegate/cmd/probegate/internal/flagconfig"
	"github.com/probegate/probegate/config"
)

// defaultConfigFile is read when --config.file is not given; unlike a file
// named explicitly, it may be missing.
const defaultConfigFile = "probegate.yml"

// options are the flags serve, demo and check-config share. Every flag has
// an environment variable, PROBEGATE_ and the flag name in upper snake
// case; a flag beats its variable, which beats the file, which beats the
// default.
type options struct {
	LogLevel        string
	LogFormat       string
	TelemetryPath   string
	ListenAddresses []string
	SystemdSocket   bool
	WebConfigFile   string
	// HealthListenAddress serves /health and /ready alone, plain and
	// unauthenticated; empty is off.
	HealthListenAddress string
	// AgentListenAddress serves HAProxy's agent protocol (listen_agent.go);
	// empty is off.
	AgentListenAddress string
	// EnableLifecycle allows POST /-/reload.
	EnableLifecycle bool
	// MaxConnections bounds each main listener's open connections.
	MaxConnections int
	// ReadTimeout bounds reading a request, head and body, and how long
	// an idle keep-alive connection stays open.
	ReadTimeout model.Duration
	// EnableAdminAPI serves the maintenance API (flags_maintenance.go).
	EnableAdminAPI bool
	// DiscoveryUpdateInterval is the longest wait between a service
	// discovery change and the pool's rebuild.
	DiscoveryUpdateInterval time.Duration
	// ReplicaName names this replica (flags_replica.go).
	ReplicaName string
	// webLimits are the admin listener and the request bounds (flags_web.go).
	webLimits

	configFile *flagconfig.Value[string]
	// overrides are the flags that replace a configuration key, and
	// --backend. The health-probe flags replace the top-level
	// health_probe block; a backend's own health_probe keys still win for
	// that backend.
	overrides flagconfig.Overrides

	// storagePath is --storage.path (flags_maintenance.go).
	storagePath *flagconfig.Value[string]
	// adminLoopbackOnly serves the admin API to loopback clients only (the demo).
	adminLoopbackOnly bool
	// testHooks are the --testing.* flags, which only a binary built
	// for the tests has (flags_testing.go, flags_release.go).
	testHooks
}

// registerFlags adds every shared flag to the application or a command;
// the values are in place once app.Parse returned.
func registerFlags(app flagconfig.Adder) *options {
	return registerFlagsFor(app, app)
}

// registerCheckFlags adds the shared flags to check-config: the ones the
// judgement of a configuration reads as they are, and the others hidden,
// so that its help lists only the flags it reads while a command line
// written for serve is still accepted as it is.
func registerCheckFlags(cmd flagconfig.Adder) *options {
	return registerFlagsFor(cmd, hiddenFlags{cmd})
}

// hiddenFlags adds flags that are accepted but not listed in the help.
type hiddenFlags struct{ flagconfig.Adder }

func (h hiddenFlags) Flag(name, help string) *kingpin.FlagClause {
	return h.Adder.Flag(name, help).Hidden()
}

// registerFlagsFor adds the shared flags: those the judgement of a
// configuration reads (judge.go) to app, the others, which only a
// running server reads, to serveOnly.
func registerFlagsFor(app, serveOnly flagconfig.Adder) *options {
	o := &options{}

	o.configFile = flagconfig.NewValue(new(string), flagconfig.String)
	o.configFile.Register(app, "config.file",
		"Configuration file. When not given, probegate.yml is read if it exists; otherwise probegate runs on the defaults and --backend flags.").
		PlaceHolder(defaultConfigFile)

	app.Flag("web.listen-address", "Address to listen on, such as :9797 or [::1]:9797. Repeatable.").
		Envar(flagconfig.Envar("web.listen-address")).Default(":9797").StringsVar(&o.ListenAddresses)
	app.Flag("web.systemd-socket", "Use systemd socket activation listeners instead of port listeners (Linux only).").
		Envar(flagconfig.Envar("web.systemd-socket")).BoolVar(&o.SystemdSocket)
	app.Flag("web.config.file", "exporter-toolkit web configuration file enabling TLS or basic authentication.").
		Envar(flagconfig.Envar("web.config.file")).PlaceHolder("FILE").StringVar(&o.WebConfigFile)
	app.Flag("web.health-listen-address", "Address of a second listener serving only /health and /ready, plain HTTP and never behind --web.config.file, for balancers and kubelets that cannot authenticate, such as :9798. Empty: off.").
		Envar(flagconfig.Envar("web.health-listen-address")).PlaceHolder("ADDRESS").StringVar(&o.HealthListenAddress)
	app.Flag("web.agent-listen-address", "Address of a listener answering HAProxy's agent-check with this replica's verdict of the backend named in the request line, such as 127.0.0.1:9796. Empty: off.").
		Envar(flagconfig.Envar("web.agent-listen-address")).PlaceHolder("ADDRESS").StringVar(&o.AgentListenAddress)
	// The two switches of the admin listener's features: check-config
	// reads them too, since the admin listener is opened only when one
	// is on.
	app.Flag("web.enable-lifecycle", "Enable POST /-/reload on the admin listener. SIGHUP reloads either way.").
		Envar(flagconfig.Envar("web.enable-lifecycle")).BoolVar(&o.EnableLifecycle)
	serveOnly.Flag("web.max-connections", "Maximum number of simultaneous connections on each main listener, and on the agent listener.").
		Envar(flagconfig.Envar("web.max-connections")).Default("512").IntVar(&o.MaxConnections)
	flagconfig.NewValue(&o.ReadTimeout, flagconfig.Duration).Register(serveOnly, "web.read-timeout",
		"Maximum duration before timing out reading a request, head and body; idle keep-alive connections are closed after it too.").Default("1m")
	flagconfig.NewValue(&o.TelemetryPath, parseTelemetryPath).Register(serveOnly, "web.telemetry-path", "Path of the Prometheus metrics.").Default("/metrics")
	flagconfig.NewValue(&o.LogLevel, flagconfig.Choice("debug", "info", "warn", "error")).
		Register(serveOnly, "log.level", "Least severe log level to print: one of debug, info, warn, error.").Default("info")
	flagconfig.NewValue(&o.LogFormat, flagconfig.Choice("logfmt", "json")).
		Register(serveOnly, "log.format", "Log format: one of logfmt, json.").Default("logfmt")

	serveOnly.Flag("discovery.update-interval", "Longest time between two rebuilds of the pool from service discovery changes.").
		Envar(flagconfig.Envar("discovery.update-interval")).Default("5s").DurationVar(&o.DiscoveryUpdateInterval)

	o.probeEnabled(app)
	flagconfig.Override(&o.overrides, app, "health-probe.path", "Probe path appended to each backend URL, for every backend that does not set its own.",
		"health_probe.path", flagconfig.Path, func(c *config.Config) *string { return &c.HealthProbe.Path })
	flagconfig.Override(&o.overrides, app, "health-probe.interval", "Time between two probes of a backend.",
		"health_probe.interval", flagconfig.Duration, func(c *config.Config) *model.Duration { return &c.HealthProbe.Interval })
	flagconfig.Override(&o.overrides, app, "health-probe.timeout", "Probe timeout; at most the interval.",
		"health_probe.timeout", flagconfig.Duration, func(c *config.Config) *model.Duration { return &c.HealthProbe.Timeout })
	flagconfig.Override(&o.overrides, app, "health-probe.failures", "Consecutive failed probes that take a backend out of service.",
		"health_probe.failures", flagconfig.Count, func(c *config.Config) *int { return &c.HealthProbe.Failures })
	flagconfig.Override(&o.overrides, app, "health-probe.successes", "Consecutive ok probes that bring it back.",
		"health_probe.successes", flagconfig.Count, func(c *config.Config) *int { return &c.HealthProbe.Successes })
	flagconfig.Override(&o.overrides, app, "gate.drain", "How long to keep serving after the first SIGTERM while /ready fails.",
		"gate.drain", flagconfig.Duration, func(c *config.Config) *model.Duration { return &c.Gate.Drain })
	flagconfig.Override(&o.overrides, app, "gate.shutdown-timeout", "Bound of the graceful shutdown after the drain.",
		"gate.shutdown_timeout", flagconfig.Duration, func(c *config.Config) *model.Duration { return &c.Gate.ShutdownTimeout })

	o.overrides.Backends(app, "backend",
		"A backend as name=url, added after the file's backends. Repeatable; in the environment variable, one per line.").PlaceHolder("NAME=URL")
	o.maintenanceFlags(app, serveOnly)
	o.replicaFlag(serveOnly)
	o.testingFlags(serveOnly)
	o.webLimitFlags(app, serveOnly)
	return o
}

// probeEnabled registers --[no-]health-probe, whose environment variable
// is PROBEGATE_HEALTH_PROBE_ENABLED rather than the derived name.
func (o *options) probeEnabled(app flagconfig.Adder) {
	o.overrides.Switch(app, "health-probe", "PROBEGATE_HEALTH_PROBE_ENABLED",
		"Probe the backends (--no-health-probe keeps every backend in service unverified).",
		"health_probe.enabled", func(c *config.Config) *bool { return &c.HealthProbe.Enabled })
}

// configPath is the configuration file to read and whether a flag or the
// environment named it.
func (o *options) configPath() (path string, explicit bool) {
	if o.configFile.Given() {
		return o.configFile.Get(), true
	}
	return defaultConfigFile, false
}

// loadConfig reads the configuration file (or starts from the defaults
// when probegate.yml was not named and does not exist), applies the flags
// and validates the result. Reloads call it again, so flags keep beating
// the file. A configuration that decoded but has problems is returned
// with the error that names them, so that judge can name the problems of
// its own checks too; a caller that only wants a valid one checks err.
func (o *options) loadConfig() (*config.Config, error) {
	path, explicit := o.configPath()
	cfg, err := config.DecodeFile(path)
	switch {
	case cfg != nil:
		// Decoded, perhaps with problems: the rest is validated too,
		// so that every problem is named at once.
	case !explicit && errors.Is(err, fs.ErrNotExist):
		cfg, err = config.Default(), nil
	default:
		return nil, err
	}
	o.overrides.Apply(cfg)
	return cfg, config.JoinErrors(err, cfg.Validate())
}

// webFlagConfig is what exporter-toolkit's web.ListenAndServe needs.
func (o *options) webFlagConfig() *toolkitweb.FlagConfig {
	return &toolkitweb.FlagConfig{
		WebListenAddresses: &o.ListenAddresses,
		WebSystemdSocket:   &o.SystemdSocket,
		WebConfigFile:      &o.WebConfigFile,
	}
}

// parseTelemetryPath accepts a path that none of probegate's own routes
// serves already, the admin listener's included, so that a path means one
// thing on every listener.
func parseTelemetryPath(s string) (string, error) {
	if _, err := flagconfig.Path(s); err != nil {
		return "", err
	}
	for _, route := range append(builtinRoutes(), adminRoutes()...) {
		if s == route || (strings.HasSuffix(route, "/") && strings.HasPrefix(s, route)) || s+"/" == route {
			return "", fmt.Errorf("%q is taken by probegate's own %s", s, route)
		}
	}
	return s, nil
}

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/model"
	"github.com/prometheus/exporter-toolkit/web"

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

	configFile *flagValue[string]
	// overrides are the flags that replace a configuration key.
	overrides []override
	backends  *backendsValue

	// storagePath is --storage.path (flags_maintenance.go).
	storagePath *flagValue[string]
	// adminLoopbackOnly serves the admin API to loopback clients only (the demo).
	adminLoopbackOnly bool
}

// override is a flag that replaces one configuration key when it was
// given.
type override struct {
	field string
	flag  interface {
		given() bool
		origin() string
	}
	apply func(*config.Config)
}

// flagAdder is where flags are registered: the application or one command.
type flagAdder interface {
	Flag(name, help string) *kingpin.FlagClause
}

// registerFlags adds every shared flag to the application or a command;
// the values are in place once app.Parse returned.
func registerFlags(app flagAdder) *options {
	o := &options{}

	o.configFile = newFlagValue(new(string), parseString)
	o.configFile.register(app, "config.file",
		"Configuration file. When not given, probegate.yml is read if it exists; otherwise probegate runs on the defaults and --backend flags.").
		PlaceHolder(defaultConfigFile)

	app.Flag("web.listen-address", "Address to listen on, such as :9797 or [::1]:9797. Repeatable.").
		Envar(envarName("web.listen-address")).Default(":9797").StringsVar(&o.ListenAddresses)
	app.Flag("web.systemd-socket", "Use systemd socket activation listeners instead of port listeners (Linux only).").
		Envar(envarName("web.systemd-socket")).BoolVar(&o.SystemdSocket)
	app.Flag("web.config.file", "exporter-toolkit web configuration file enabling TLS or basic authentication.").
		Envar(envarName("web.config.file")).PlaceHolder("web.yml").StringVar(&o.WebConfigFile)
	app.Flag("web.health-listen-address", "Address of a second listener serving only /health and /ready, plain HTTP and never behind --web.config.file, for balancers and kubelets that cannot authenticate, such as :9798. Empty: off.").
		Envar(envarName("web.health-listen-address")).PlaceHolder(":9798").StringVar(&o.HealthListenAddress)
	app.Flag("web.enable-lifecycle", "Enable POST /-/reload. SIGHUP reloads either way.").
		Envar(envarName("web.enable-lifecycle")).BoolVar(&o.EnableLifecycle)
	app.Flag("web.max-connections", "Maximum number of simultaneous connections on each main listener.").
		Envar(envarName("web.max-connections")).Default("512").IntVar(&o.MaxConnections)
	newFlagValue(&o.ReadTimeout, parseDuration).register(app, "web.read-timeout",
		"Maximum duration before timing out reading a request, head and body; idle keep-alive connections are closed after it too.").Default("1m")
	newFlagValue(&o.TelemetryPath, parseTelemetryPath).register(app, "web.telemetry-path", "Path of the Prometheus metrics.").Default("/metrics")
	newFlagValue(&o.LogLevel, parseChoice("debug", "info", "warn", "error")).
		register(app, "log.level", "Least severe log level to print: one of debug, info, warn, error.").Default("info")
	newFlagValue(&o.LogFormat, parseChoice("logfmt", "json")).
		register(app, "log.format", "Log format: one of logfmt, json.").Default("logfmt")

	app.Flag("discovery.update-interval", "Longest time between two rebuilds of the pool from service discovery changes.").
		Envar(envarName("discovery.update-interval")).Default("5s").DurationVar(&o.DiscoveryUpdateInterval)

	o.probeEnabled(app)
	addOverride(o, app, "health-probe.path", "Probe path appended to each backend URL, for every backend that does not set its own.",
		"health_probe.path", parsePath, func(c *config.Config) *string { return &c.HealthProbe.Path })
	addOverride(o, app, "health-probe.interval", "Time between two probes of a backend.",
		"health_probe.interval", parseDuration, func(c *config.Config) *model.Duration { return &c.HealthProbe.Interval })
	addOverride(o, app, "health-probe.timeout", "Probe timeout; at most the interval.",
		"health_probe.timeout", parseDuration, func(c *config.Config) *model.Duration { return &c.HealthProbe.Timeout })
	addOverride(o, app, "health-probe.failures", "Consecutive failed probes that take a backend out of service.",
		"health_probe.failures", parseCount, func(c *config.Config) *int { return &c.HealthProbe.Failures })
	addOverride(o, app, "health-probe.successes", "Consecutive ok probes that bring it back.",
		"health_probe.successes", parseCount, func(c *config.Config) *int { return &c.HealthProbe.Successes })
	addOverride(o, app, "gate.drain", "How long to keep serving after the first SIGTERM while /ready fails.",
		"gate.drain", parseDuration, func(c *config.Config) *model.Duration { return &c.Gate.Drain })
	addOverride(o, app, "gate.shutdown-timeout", "Bound of the graceful shutdown after the drain.",
		"gate.shutdown_timeout", parseDuration, func(c *config.Config) *model.Duration { return &c.Gate.ShutdownTimeout })

	o.backends = &backendsValue{}
	registerValue(app, "backend", envarName("backend"),
		"A backend as name=url, added after the file's backends. Repeatable; in the environment variable, one per line.",
		&o.backends.flagSource, o.backends).PlaceHolder("NAME=URL")
	o.maintenanceFlags(app)
	o.replicaFlag(app)
	return o
}

// probeEnabled registers --[no-]health-probe, whose environment variable
// is PROBEGATE_HEALTH_PROBE_ENABLED rather than the derived name.
func (o *options) probeEnabled(app flagAdder) {
	v := &boolFlagValue{*newFlagValue(new(bool), strconv.ParseBool)}
	registerValue(app, "health-probe", "PROBEGATE_HEALTH_PROBE_ENABLED",
		"Probe the backends (--no-health-probe keeps every backend in service unverified).", &v.flagSource, v)
	o.overrides = append(o.overrides, override{field: "health_probe.enabled", flag: v,
		apply: func(c *config.Config) { c.HealthProbe.Enabled = *v.value }})
}

// addOverride registers a flag that replaces the configuration key field.
// Its help shows the key's default, which applies when neither the flag
// nor the file sets it.
func addOverride[T any](o *options, app flagAdder, name, help, field string,
	parse func(string) (T, error), key func(*config.Config) *T) {
	v := newFlagValue(new(T), parse)
	v.register(app, name, help).PlaceHolder(fmt.Sprint(*key(config.Default())))
	o.overrides = append(o.overrides, override{field: field, flag: v,
		apply: func(c *config.Config) { *key(c) = *v.value }})
}

// configPath is the configuration file to read and whether a flag or the
// environment named it.
func (o *options) configPath() (path string, explicit bool) {
	if o.configFile.given() {
		return *o.configFile.value, true
	}
	return defaultConfigFile, false
}

// loadConfig reads the configuration file (or starts from the defaults
// when probegate.yml was not named and does not exist), applies the flags
// and validates the result. Reloads call it again, so flags keep beating
// the file.
func (o *options) loadConfig() (*config.Config, error) {
	path, explicit := o.configPath()
	cfg, err := config.DecodeFile(path)
	switch {
	case err == nil:
	case !explicit && errors.Is(err, fs.ErrNotExist):
		cfg = config.Default()
	default:
		return nil, err
	}
	o.applyOverrides(cfg)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// applyOverrides replaces the keys whose flags or environment variables
// were given and appends the --backend backends, recording each origin so
// that Validate blames the flag. The health-probe flags replace the
// top-level health_probe block; a backend's own health_probe keys still
// win for that backend.
func (o *options) applyOverrides(cfg *config.Config) {
	for _, ov := range o.overrides {
		if ov.flag.given() {
			ov.apply(cfg)
			cfg.SetOrigin(ov.field, ov.flag.origin())
		}
	}
	for _, b := range o.backends.entries {
		backend := config.Backend{Name: b.name, URL: b.url}
		backend.SetOrigin(b.origin)
		cfg.Backends = append(cfg.Backends, backend)
	}
}

// webFlagConfig is what exporter-toolkit's web.ListenAndServe needs.
func (o *options) webFlagConfig() *web.FlagConfig {
	return &web.FlagConfig{
		WebListenAddresses: &o.ListenAddresses,
		WebSystemdSocket:   &o.SystemdSocket,
		WebConfigFile:      &o.WebConfigFile,
	}
}

// envarName is the environment variable of a flag: --gate.drain is
// PROBEGATE_GATE_DRAIN.
func envarName(flag string) string {
	return "PROBEGATE_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(flag))
}

// flagSource remembers how a flag's value was given, so that errors name
// the flag or the environment variable the operator actually used.
type flagSource struct {
	name  string
	envar string
	// byFlag is set by kingpin while it reads the command line, before any
	// value is set, when the flag is on it.
	byFlag bool
}

// origin names the flag or environment variable that gave the value.
func (s *flagSource) origin() string {
	if s.byFlag {
		return "--" + s.name
	}
	return s.envar
}

// flagValue is a kingpin value of type T that records whether it was
// given, by the flag or its environment variable.
type flagValue[T any] struct {
	flagSource
	value *T
	set   bool
	parse func(string) (T, error)
}

func newFlagValue[T any](value *T, parse func(string) (T, error)) *flagValue[T] {
	return &flagValue[T]{value: value, parse: parse}
}

// register adds the flag with its derived environment variable.
func (v *flagValue[T]) register(app flagAdder, name, help string) *kingpin.FlagClause {
	return registerValue(app, name, envarName(name), help, &v.flagSource, v)
}

// registerValue adds a flag whose value records how it was given in src.
func registerValue(app flagAdder, name, envar, help string, src *flagSource, value kingpin.Value) *kingpin.FlagClause {
	src.name, src.envar = name, envar
	clause := app.Flag(name, help).Envar(envar).IsSetByUser(&src.byFlag)
	clause.SetValue(value)
	return clause
}

// Set parses a value from the command line, the environment or the
// default; a bad value is an error naming where it came from.
func (v *flagValue[T]) Set(s string) error {
	parsed, err := v.parse(s)
	if err != nil {
		return fmt.Errorf("%s: %w", v.origin(), err)
	}
	*v.value, v.set = parsed, true
	return nil
}

func (v *flagValue[T]) String() string {
	if v.value == nil {
		return ""
	}
	return fmt.Sprint(*v.value)
}

// given reports whether the flag or its environment variable set the value.
func (v *flagValue[T]) given() bool { return v.set }

// boolFlagValue is a flagValue that kingpin treats as a switch, with its
// --no- form.
type boolFlagValue struct{ flagValue[bool] }

// IsBoolFlag tells kingpin the flag takes no argument.
func (*boolFlagValue) IsBoolFlag() bool { return true }

// backendsValue collects the repeatable --backend name=url.
type backendsValue struct {
	flagSource
	entries []backendEntry
}

type backendEntry struct {
	name, url, origin string
}

// Set adds one backend. The name and URL are checked by Validate, which
// names this flag.
func (v *backendsValue) Set(s string) error {
	name, url, ok := strings.Cut(s, "=")
	name, url = strings.TrimSpace(name), strings.TrimSpace(url)
	if !ok || name == "" || url == "" {
		return fmt.Errorf("%s: %q: want name=url, such as pdb-1=http://127.0.0.1:8081", v.origin(), config.RedactURL(s))
	}
	// The origin is shown in errors: never with a password.
	v.entries = append(v.entries, backendEntry{name: name, url: url, origin: v.origin() + " " + name + "=" + config.RedactURL(url)})
	return nil
}

func (v *backendsValue) String() string {
	parts := make([]string, len(v.entries))
	for i, e := range v.entries {
		parts[i] = e.name + "=" + e.url
	}
	return strings.Join(parts, ",")
}

// IsCumulative tells kingpin the flag may repeat.
func (*backendsValue) IsCumulative() bool { return true }

func parseString(s string) (string, error) { return s, nil }

func parseDuration(s string) (model.Duration, error) {
	d, err := model.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: want one such as 500ms, 5s or 1m30s", s)
	}
	return d, nil
}

func parseCount(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%q is not a whole number of at least 1", s)
	}
	return n, nil
}

func parsePath(s string) (string, error) {
	if !strings.HasPrefix(s, "/") {
		return "", fmt.Errorf("%q must start with \"/\"", s)
	}
	return s, nil
}

// parseTelemetryPath accepts a path that none of probegate's own routes
// serves already.
func parseTelemetryPath(s string) (string, error) {
	if _, err := parsePath(s); err != nil {
		return "", err
	}
	for _, route := range builtinRoutes() {
		if s == route || (strings.HasSuffix(route, "/") && strings.HasPrefix(s, route)) || s+"/" == route {
			return "", fmt.Errorf("%q is taken by probegate's own %s", s, route)
		}
	}
	return s, nil
}

// parseChoice accepts one of choices.
func parseChoice(choices ...string) func(string) (string, error) {
	return func(s string) (string, error) {
		if !slices.Contains(choices, s) {
			return "", fmt.Errorf("%q is not one of %s", s, strings.Join(choices, ", "))
		}
		return s, nil
	}
}

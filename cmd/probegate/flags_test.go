package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/model"
)

// isolateEnv hides every PROBEGATE_ variable of the test's environment, so
// that only what a test sets is seen.
func isolateEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "PROBEGATE_") {
			t.Setenv(name, "")
		}
	}
}

// parseFlags registers the shared flags on a fresh application, as main
// does, and parses args.
func parseFlags(t *testing.T, args ...string) (*options, error) {
	t.Helper()
	app := kingpin.New("probegate", "test")
	o := registerFlags(app)
	_, err := app.Parse(args)
	return o, err
}

// parsed is parseFlags for arguments that must parse.
func parsed(t *testing.T, args ...string) *options {
	t.Helper()
	o, err := parseFlags(t, args...)
	if err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return o
}

// writeFile writes a configuration file into a fresh directory.
func writeFile(t *testing.T, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "probegate.yml")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPrecedenceFlagBeatsEnvBeatsFileBeatsDefault(t *testing.T) {
	file := "health_probe:\n  enabled: true\n  path: /file\n  interval: 20s\n  timeout: 1s\ngate:\n  drain: 7s\n"
	env := map[string]string{
		"PROBEGATE_HEALTH_PROBE_PATH":     "/env",
		"PROBEGATE_HEALTH_PROBE_INTERVAL": "30s",
		"PROBEGATE_GATE_DRAIN":            "8s",
		"PROBEGATE_HEALTH_PROBE_ENABLED":  "false",
	}
	flags := []string{"--health-probe.path=/flag", "--health-probe.interval=40s", "--gate.drain=9s", "--health-probe"}
	type want struct {
		path     string
		interval time.Duration
		drain    time.Duration
		enabled  bool
	}
	for _, tc := range []struct {
		name  string
		file  string
		env   map[string]string
		flags []string
		want  want
	}{
		{"default", "", nil, nil, want{"/healthz", 5 * time.Second, 0, true}},
		{"file beats default", file, nil, nil, want{"/file", 20 * time.Second, 7 * time.Second, true}},
		{"env beats file", file, env, nil, want{"/env", 30 * time.Second, 8 * time.Second, false}},
		{"flag beats env", file, env, flags, want{"/flag", 40 * time.Second, 9 * time.Second, true}},
		{"a flag set to the zero value still beats the file", file, nil,
			[]string{"--gate.drain=0s", "--no-health-probe"}, want{"/file", 20 * time.Second, 0, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolateEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			args := append([]string{"--config.file=" + writeFile(t, tc.file)}, tc.flags...)
			cfg, err := parsed(t, args...).loadConfig()
			if err != nil {
				t.Fatalf("loadConfig: %v", err)
			}
			got := want{cfg.HealthProbe.Path, time.Duration(cfg.HealthProbe.Interval), time.Duration(cfg.Gate.Drain), cfg.HealthProbe.Enabled}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestEveryOverrideFlagReachesItsKey(t *testing.T) {
	isolateEnv(t)
	o := parsed(t, "--config.file="+writeFile(t, ""),
		"--health-probe.path=/p", "--health-probe.interval=11s", "--health-probe.timeout=3s",
		"--health-probe.failures=6", "--health-probe.successes=4", "--no-health-probe",
		"--gate.drain=12s", "--gate.shutdown-timeout=13s")
	cfg, err := o.loadConfig()
	if err != nil {
		t.Fatalf("loadConfig: %v", err)
	}
	p := cfg.HealthProbe
	if p.Path != "/p" || p.Interval != model.Duration(11*time.Second) || p.Timeout != model.Duration(3*time.Second) ||
		p.Failures != 6 || p.Successes != 4 || p.Enabled {
		t.Errorf("health_probe = %+v", p)
	}
	if cfg.Gate.Drain != model.Duration(12*time.Second) || cfg.Gate.ShutdownTimeout != model.Duration(13*time.Second) {
		t.Errorf("gate = %+v", cfg.Gate)
	}
}

func TestProbeFlagsLeaveABackendsOwnKeys(t *testing.T) {
	isolateEnv(t)
	file := writeFile(t, "backends:\n  - name: own\n    url: http://127.0.0.1:1\n    health_probe: {path: /own}\n")
	cfg, err := parsed(t, "--config.file="+file, "--health-probe.path=/flag").loadConfig()
	if err != nil {
		t.Fatalf("loadConfig: %v", err)
	}
	if got := cfg.ProbeFor(cfg.Backends[0]).Path; got != "/own" {
		t.Errorf("backend probe path = %q, want its own /own", got)
	}
	if cfg.HealthProbe.Path != "/flag" {
		t.Errorf("top-level path = %q, want /flag", cfg.HealthProbe.Path)
	}
}

func TestBackendFlagsWithoutAFile(t *testing.T) {
	isolateEnv(t)
	t.Chdir(t.TempDir()) // no probegate.yml here
	cfg, err := parsed(t, "--backend", "pdb-1=http://127.0.0.1:8081", "--backend=pdb-2=http://127.0.0.1:8082/").loadConfig()
	if err != nil {
		t.Fatalf("loadConfig: %v", err)
	}
	if cfg.File() != "" {
		t.Errorf("configuration came from %q, want no file", cfg.File())
	}
	var got []string
	for _, b := range cfg.Backends {
		got = append(got, b.Name+"="+b.URL)
	}
	if want := []string{"pdb-1=http://127.0.0.1:8081", "pdb-2=http://127.0.0.1:8082/"}; !reflect.DeepEqual(got, want) {
		t.Errorf("backends = %q, want %q", got, want)
	}
	if cfg.HealthProbe.Path != "/healthz" {
		t.Errorf("without a file the defaults apply; path = %q", cfg.HealthProbe.Path)
	}
}

func TestBackendEnvironmentVariableOnePerLine(t *testing.T) {
	isolateEnv(t)
	t.Chdir(t.TempDir())
	t.Setenv("PROBEGATE_BACKEND", "a=http://127.0.0.1:1\nb=http://127.0.0.1:2")
	cfg, err := parsed(t).loadConfig()
	if err != nil {
		t.Fatalf("loadConfig: %v", err)
	}
	if len(cfg.Backends) != 2 || cfg.Backends[1].Name != "b" {
		t.Errorf("backends = %+v, want a and b", cfg.Backends)
	}
}

func TestBackendFlagsAreAppendedToTheFile(t *testing.T) {
	isolateEnv(t)
	file := writeFile(t, "backends:\n  - name: pdb-1\n    url: http://127.0.0.1:8081\n")
	cfg, err := parsed(t, "--config.file="+file, "--backend=pdb-2=http://127.0.0.1:8082").loadConfig()
	if err != nil {
		t.Fatalf("loadConfig: %v", err)
	}
	if len(cfg.Backends) != 2 || cfg.Backends[0].Name != "pdb-1" || cfg.Backends[1].Name != "pdb-2" {
		t.Errorf("backends = %+v, want pdb-1 from the file, then pdb-2", cfg.Backends)
	}

	_, err = parsed(t, "--config.file="+file, "--backend=pdb-1=http://127.0.0.1:9999").loadConfig()
	want := `--backend pdb-1=http://127.0.0.1:9999 (backends[1].name): "pdb-1" is already the name of backends[0]`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("duplicate from a flag: got %v, want %q", err, want)
	}
}

func TestExplicitMissingConfigFileIsAnError(t *testing.T) {
	isolateEnv(t)
	missing := filepath.Join(t.TempDir(), "nope.yml")
	_, err := parsed(t, "--config.file="+missing).loadConfig()
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("got %v, want an error naming %s", err, missing)
	}
	t.Setenv("PROBEGATE_CONFIG_FILE", missing)
	if _, err := parsed(t).loadConfig(); err == nil {
		t.Errorf("a missing file named by PROBEGATE_CONFIG_FILE was not an error")
	}
}

func TestBadFlagValuesNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		says string
	}{
		{"backend without =", nil, []string{"--backend", "pdb-1"}, `--backend: "pdb-1": want name=url`},
		{"backend without name", nil, []string{"--backend", "=http://x"}, `--backend: "=http://x": want name=url`},
		{"backend from env", map[string]string{"PROBEGATE_BACKEND": "pdb-1"}, nil, `PROBEGATE_BACKEND: "pdb-1": want name=url`},
		{"duration", nil, []string{"--health-probe.interval=5"}, `--health-probe.interval: "5" is not a duration`},
		{"duration from env", map[string]string{"PROBEGATE_GATE_DRAIN": "soon"}, nil, `PROBEGATE_GATE_DRAIN: "soon" is not a duration`},
		{"count", nil, []string{"--health-probe.failures=0"}, `--health-probe.failures: "0" is not a whole number of at least 1`},
		{"path", nil, []string{"--health-probe.path=healthz"}, `--health-probe.path: "healthz" must start with "/"`},
		{"telemetry path", nil, []string{"--web.telemetry-path=metrics"}, `--web.telemetry-path: "metrics" must start with "/"`},
		{"log level", nil, []string{"--log.level=verbose"}, `--log.level: "verbose" is not one of debug, info, warn, error`},
		{"log format from env", map[string]string{"PROBEGATE_LOG_FORMAT": "xml"}, nil, `PROBEGATE_LOG_FORMAT: "xml" is not one of logfmt, json`},
		{"switch from env", map[string]string{"PROBEGATE_HEALTH_PROBE_ENABLED": "maybe"}, nil, `PROBEGATE_HEALTH_PROBE_ENABLED: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolateEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := parseFlags(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("got %v, want an error saying %q", err, tc.says)
			}
		})
	}
}

func TestInvalidValuesFromFlagsNameTheFlag(t *testing.T) {
	isolateEnv(t)
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--health-probe.timeout=10s"},
			"--health-probe.timeout (health_probe.timeout): 10s is longer than the interval 5s (the default health_probe.interval)"},
		{[]string{"--backend=pdb 1=http://127.0.0.1:1"},
			`--backend pdb 1=http://127.0.0.1:1 (backends[0].name): "pdb 1" may contain only letters, digits, '_', '.', ':' and '-'`},
		{[]string{"--backend=pdb-1=ftp://127.0.0.1:1"},
			`--backend pdb-1=ftp://127.0.0.1:1 (backends[0].url): "ftp://127.0.0.1:1": want an absolute http:// or https:// URL`},
	} {
		_, err := parsed(t, tc.args...).loadConfig()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestEveryFlagHasItsEnvironmentVariable(t *testing.T) {
	app := kingpin.New("probegate", "test")
	registerFlags(app)
	want := map[string]string{
		"config.file":                "PROBEGATE_CONFIG_FILE",
		"web.listen-address":         "PROBEGATE_WEB_LISTEN_ADDRESS",
		"web.systemd-socket":         "PROBEGATE_WEB_SYSTEMD_SOCKET",
		"web.config.file":            "PROBEGATE_WEB_CONFIG_FILE",
		"web.health-listen-address":  "PROBEGATE_WEB_HEALTH_LISTEN_ADDRESS",
		"web.agent-listen-address":   "PROBEGATE_WEB_AGENT_LISTEN_ADDRESS",
		"web.enable-lifecycle":       "PROBEGATE_WEB_ENABLE_LIFECYCLE",
		"web.max-connections":        "PROBEGATE_WEB_MAX_CONNECTIONS",
		"web.read-timeout":           "PROBEGATE_WEB_READ_TIMEOUT",
		"web.telemetry-path":         "PROBEGATE_WEB_TELEMETRY_PATH",
		"log.level":                  "PROBEGATE_LOG_LEVEL",
		"log.format":                 "PROBEGATE_LOG_FORMAT",
		"health-probe":               "PROBEGATE_HEALTH_PROBE_ENABLED",
		"health-probe.path":          "PROBEGATE_HEALTH_PROBE_PATH",
		"health-probe.interval":      "PROBEGATE_HEALTH_PROBE_INTERVAL",
		"health-probe.timeout":       "PROBEGATE_HEALTH_PROBE_TIMEOUT",
		"health-probe.failures":      "PROBEGATE_HEALTH_PROBE_FAILURES",
		"health-probe.successes":     "PROBEGATE_HEALTH_PROBE_SUCCESSES",
		"gate.drain":                 "PROBEGATE_GATE_DRAIN",
		"gate.shutdown-timeout":      "PROBEGATE_GATE_SHUTDOWN_TIMEOUT",
		"backend":                    "PROBEGATE_BACKEND",
		"web.enable-admin-api":       "PROBEGATE_WEB_ENABLE_ADMIN_API",
		"storage.path":               "PROBEGATE_STORAGE_PATH",
		"replica.name":               "PROBEGATE_REPLICA_NAME",
		"discovery.update-interval":  "PROBEGATE_DISCOVERY_UPDATE_INTERVAL",
		"web.admin-listen-address":   "PROBEGATE_WEB_ADMIN_LISTEN_ADDRESS",
		"web.max-header-bytes":       "PROBEGATE_WEB_MAX_HEADER_BYTES",
		"web.read-header-timeout":    "PROBEGATE_WEB_READ_HEADER_TIMEOUT",
		"web.max-requests-in-flight": "PROBEGATE_WEB_MAX_REQUESTS_IN_FLIGHT",
	}
	got := map[string]string{}
	for _, f := range app.Model().Flags {
		if !f.Hidden && f.Name != "help" {
			got[f.Name] = f.Envar
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("flags and their variables:\ngot  %v\nwant %v", got, want)
	}
}

func TestServerFlagDefaultsAndEnvironment(t *testing.T) {
	isolateEnv(t)
	o := parsed(t)
	if !reflect.DeepEqual(o.ListenAddresses, []string{":9797"}) || o.TelemetryPath != "/metrics" ||
		o.LogLevel != "info" || o.LogFormat != "logfmt" || o.WebConfigFile != "" || o.SystemdSocket {
		t.Errorf("defaults: %+v", o)
	}
	if path, explicit := o.configPath(); path != "probegate.yml" || explicit {
		t.Errorf("configPath() = %q, %v, want probegate.yml, not explicit", path, explicit)
	}

	t.Setenv("PROBEGATE_WEB_LISTEN_ADDRESS", "127.0.0.1:1\n[::1]:2")
	t.Setenv("PROBEGATE_WEB_TELEMETRY_PATH", "/m")
	t.Setenv("PROBEGATE_LOG_LEVEL", "debug")
	o = parsed(t, "--log.level=warn", "--web.config.file=web.yml")
	if !reflect.DeepEqual(o.ListenAddresses, []string{"127.0.0.1:1", "[::1]:2"}) || o.TelemetryPath != "/m" || o.LogLevel != "warn" {
		t.Errorf("from the environment and flags: %+v", o)
	}
	fc := o.webFlagConfig()
	if !reflect.DeepEqual(*fc.WebListenAddresses, o.ListenAddresses) || *fc.WebConfigFile != "web.yml" || *fc.WebSystemdSocket {
		t.Errorf("webFlagConfig() = %v %v %v", *fc.WebListenAddresses, *fc.WebConfigFile, *fc.WebSystemdSocket)
	}
}

// TestWebLimitFlags: the admin listener is on loopback by default, and
// the request bounds have their documented defaults and read sizes with
// units.
func TestWebLimitFlags(t *testing.T) {
	isolateEnv(t)
	o := parsed(t)
	want := webLimits{AdminListenAddress: "127.0.0.1:9799", MaxHeaderBytes: 64 << 10,
		ReadHeaderTimeout: model.Duration(10 * time.Second), MaxRequestsInFlight: 4}
	if o.webLimits != want {
		t.Errorf("defaults %+v; want %+v", o.webLimits, want)
	}
	t.Setenv("PROBEGATE_WEB_ADMIN_LISTEN_ADDRESS", "[::1]:1")
	o = parsed(t, "--web.max-header-bytes=1MiB", "--web.read-header-timeout=2s", "--web.max-requests-in-flight=9")
	want = webLimits{AdminListenAddress: "[::1]:1", MaxHeaderBytes: 1 << 20, ReadHeaderTimeout: model.Duration(2 * time.Second), MaxRequestsInFlight: 9}
	if o.webLimits != want {
		t.Errorf("from flags and the environment %+v; want %+v", o.webLimits, want)
	}
}

func TestTelemetryPathMayNotTakeABuiltinRoute(t *testing.T) {
	for _, path := range []string{"/health", "/ready", "/healthz", "/fanout", "/fanout/x", "/-/reload"} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"check-config", "--web.telemetry-path=" + path, "--backend=a=http://127.0.0.1:1"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "taken by probegate") {
			t.Errorf("--web.telemetry-path=%s: exit %d, stderr %q; want 1 naming the clash", path, code, stderr.String())
		}
	}
	if _, err := parseTelemetryPath("/probegate/metrics"); err != nil {
		t.Errorf("a free path was refused: %v", err)
	}
}

func TestCheckConfigExitsOneForABadFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"check-config", "--health-probe.failures=0", "--backend=a=http://127.0.0.1:1"}, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "--health-probe.failures") {
		t.Errorf("exit %d, stderr %q; want 1 naming --health-probe.failures", code, stderr.String())
	}
}

func TestReplicaNameDefaultsToHostAndListenPort(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	o := &options{ListenAddresses: []string{"127.0.0.1:19797"}}
	if got, want := o.replicaName(), net.JoinHostPort(host, "19797"); got != want {
		t.Errorf("replicaName() = %q, want %q", got, want)
	}
	o.ReplicaName = "probegate-0"
	if got := o.replicaName(); got != "probegate-0" {
		t.Errorf("replicaName() with --replica.name = %q", got)
	}
}

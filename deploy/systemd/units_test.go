package systemd

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/deploy/deploytest"
)

// unit is a parsed unit file: section, then key, then its values in order
// (a key may repeat).
type unit map[string]map[string][]string

func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := unit{}
	section := ""
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			u[section] = map[string][]string{}
		default:
			key, value, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: not a key=value line in a section: %q", path, i+1, line)
			}
			u[section][key] = append(u[section][key], value)
		}
	}
	return u
}

// last is the value systemd applies for a key set once or more.
func (u unit) last(section, key string) string {
	v := u[section][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// TestSystemdAnalyzeVerify runs systemd-analyze verify on both units, with
// ExecStart pointing at a freshly built binary (verify checks that it
// exists). Any complaint fails, warnings about unknown keys included.
func TestSystemdAnalyzeVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is missing: install the Debian package systemd (make deps does)")
	}
	bin := deploytest.Build(t)
	dir := t.TempDir()
	for _, name := range []string{"probegate.service", "probegate.socket"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(data), "/usr/local/bin/probegate", bin)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(analyze, "verify", "probegate.socket", "probegate.service")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

func TestServiceRunsTheBinaryOnTheSocket(t *testing.T) {
	svc := parseUnit(t, "probegate.service")
	sock := parseUnit(t, "probegate.socket")

	args := strings.Fields(svc.last("Service", "ExecStart"))
	if len(args) == 0 || args[0] != "/usr/local/bin/probegate" {
		t.Fatalf("ExecStart %v does not run /usr/local/bin/probegate", args)
	}
	flags := deploytest.Flags(t, deploytest.Build(t))
	deploytest.CheckFlags(t, "probegate.service ExecStart", flags, args[1:])
	if !strings.Contains(strings.Join(args, " "), "--web.systemd-socket") {
		t.Errorf("ExecStart %v does not take the socket of probegate.socket (--web.systemd-socket)", args)
	}
	if got := sock.last("Socket", "ListenStream"); got != "9797" {
		t.Errorf("probegate.socket listens on %q, want probegate's port 9797", got)
	}
	if got := sock.last("Socket", "Service"); got != "probegate.service" {
		t.Errorf("probegate.socket activates %q, want probegate.service", got)
	}
	if !strings.Contains(svc.last("Unit", "Requires"), "probegate.socket") {
		t.Errorf("probegate.service does not require probegate.socket")
	}
	if got := svc.last("Service", "ExecReload"); !strings.Contains(got, "-HUP $MAINPID") {
		t.Errorf("ExecReload %q does not send SIGHUP, probegate's reload", got)
	}
}

// TestStateIsWritable: under ProtectSystem=strict nothing is writable
// unless the unit says so, so the admin API's maintenance.json needs the
// unit's state directory, and probegate must be told to keep it there.
func TestStateIsWritable(t *testing.T) {
	svc := parseUnit(t, "probegate.service")
	dir := svc.last("Service", "StateDirectory")
	if dir != "probegate" {
		t.Errorf("StateDirectory %q, want probegate (/var/lib/probegate)", dir)
	}
	args := strings.Fields(svc.last("Service", "ExecStart"))
	if !slices.Contains(args, "--storage.path=/var/lib/"+dir) {
		t.Errorf("ExecStart %v does not keep its state in the StateDirectory: want --storage.path=/var/lib/%s", args, dir)
	}
}

// TestStopWaitsForTheDrain: systemd must not kill probegate before the
// drain window and graceful shutdown of the default configuration are over.
func TestStopWaitsForTheDrain(t *testing.T) {
	svc := parseUnit(t, "probegate.service")
	if got := svc.last("Service", "KillSignal"); got != "SIGTERM" {
		t.Errorf("KillSignal %q, want SIGTERM, which starts the drain", got)
	}
	stop, err := time.ParseDuration(svc.last("Service", "TimeoutStopSec"))
	if err != nil {
		t.Fatalf("TimeoutStopSec: %v", err)
	}
	d := config.Default()
	need := time.Duration(d.Gate.Drain) + time.Duration(d.Gate.ShutdownTimeout)
	if stop <= need {
		t.Errorf("TimeoutStopSec %s does not exceed gate.drain + gate.shutdown_timeout = %s", stop, need)
	}
}

func TestServiceIsHardened(t *testing.T) {
	svc := parseUnit(t, "probegate.service")
	for key, want := range map[string]string{
		"DynamicUser":             "yes",
		"NoNewPrivileges":         "yes",
		"CapabilityBoundingSet":   "",
		"AmbientCapabilities":     "",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"PrivateDevices":          "yes",
		"ProtectKernelTunables":   "yes",
		"ProtectKernelModules":    "yes",
		"ProtectControlGroups":    "yes",
		"RestrictNamespaces":      "yes",
		"RestrictSUIDSGID":        "yes",
		"MemoryDenyWriteExecute":  "yes",
		"LockPersonality":         "yes",
		"SystemCallArchitectures": "native",
		"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
	} {
		if _, set := svc["Service"][key]; !set {
			t.Errorf("probegate.service does not set %s", key)
			continue
		}
		if got := svc.last("Service", key); got != want {
			t.Errorf("probegate.service %s=%s, want %q", key, got, want)
		}
	}
	if filters := svc["Service"]["SystemCallFilter"]; len(filters) == 0 || filters[0] != "@system-service" {
		t.Errorf("SystemCallFilter %v does not start from @system-service", filters)
	}
}

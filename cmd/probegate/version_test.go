package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/version"
)

// TestVersionCommandAndFlag: `probegate version` prints what --version
// prints, build user and date included.
func TestVersionCommandAndFlag(t *testing.T) {
	user, date := version.BuildUser, version.BuildDate
	version.BuildUser, version.BuildDate = "builder@host", "20240301-12:00:00"
	t.Cleanup(func() { version.BuildUser, version.BuildDate = user, date })
	var out, errOut bytes.Buffer
	if code := run([]string{"version"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"probegate, version", "build user:       builder@host", "build date:       20240301-12:00:00"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("`probegate version` lacks %q:\n%s", want, out.String())
		}
	}
}

// simulateRun runs `probegate simulate args...` in an empty directory
// and returns its output.
func simulateRun(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(append([]string{"simulate"}, args...), &out, &errOut); code != 0 {
		t.Fatalf("simulate %q: exit %d: %s", args, code, errOut.String())
	}
	return out.String()
}

// TestSimulateReadsThresholdsAsServeDoes: the file, the environment
// variable, the long flag and its short alias set the thresholds, in
// serve's order of precedence.
func TestSimulateReadsThresholdsAsServeDoes(t *testing.T) {
	isolateEnv(t)
	t.Chdir(t.TempDir())
	// One 503 after an ok: unhealthy only with failures 1.
	outAfter := func(args ...string) string {
		lines := strings.Split(strings.TrimSpace(simulateRun(t, append(args, "200", "503")...)), "\n")
		return lines[len(lines)-1]
	}
	if got := outAfter(); !strings.Contains(got, "state=healthy") {
		t.Errorf("default thresholds: %s", got)
	}
	path := filepath.Join(t.TempDir(), "p.yml")
	if err := os.WriteFile(path, []byte("health_probe: {failures: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := outAfter("--config.file=" + path); !strings.Contains(got, "state=unhealthy") {
		t.Errorf("failures 1 from the file: %s", got)
	}
	if got := outAfter("--config.file="+path, "--health-probe.failures=3"); !strings.Contains(got, "state=healthy") {
		t.Errorf("the flag does not beat the file: %s", got)
	}
	if got := outAfter("--config.file="+path, "--failures=3"); !strings.Contains(got, "state=healthy") {
		t.Errorf("the --failures alias does not beat the file: %s", got)
	}
	t.Setenv("PROBEGATE_HEALTH_PROBE_FAILURES", "1")
	if got := outAfter(); !strings.Contains(got, "state=unhealthy") {
		t.Errorf("failures 1 from the environment: %s", got)
	}
}

// TestDefaultVersionIsTheVersionFile: a build that stamps no version
// (go build, go install) reports the VERSION file's, and a stamped one
// keeps its own.
func TestDefaultVersionIsTheVersionFile(t *testing.T) {
	data, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(data))
	saved := version.Version
	t.Cleanup(func() { version.Version = saved })

	version.Version = ""
	defaultVersion()
	var out, errOut bytes.Buffer
	// `probegate version` prints what --version does, which exits.
	if code := run([]string{"version"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "probegate, version "+want+" ") {
		t.Errorf("unstamped build: exit %d, %q; want version %s from VERSION", code, out.String(), want)
	}

	version.Version = "1.2.3-stamped"
	defaultVersion()
	if version.Version != "1.2.3-stamped" {
		t.Errorf("a stamped version became %q", version.Version)
	}
}

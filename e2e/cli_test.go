package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// helpOf is the --help output of a probegate command, its wrapped lines
// joined with single spaces.
func helpOf(t *testing.T, command string) string {
	t.Helper()
	out, err := exec.Command(binary(t), command, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("probegate %s --help: %v\n%s", command, err, out)
	}
	return strings.Join(strings.Fields(string(out)), " ")
}

// TestVersionCommand: `probegate version` prints the build information
// --version prints.
func TestVersionCommand(t *testing.T) {
	cmd, err := exec.Command(binary(t), "version").Output()
	flag, err2 := exec.Command(binary(t), "--version").CombinedOutput()
	if err != nil || err2 != nil || string(cmd) != string(flag) || !strings.Contains(string(cmd), "build user:") {
		t.Errorf("version: %q (%v); --version: %q (%v)", cmd, err, flag, err2)
	}
}

// TestSimulateHelpListsOnlyItsFlags: simulate's help names the flags it
// honours and none of serve's; enum flags name their values.
func TestSimulateHelpListsOnlyItsFlags(t *testing.T) {
	help := helpOf(t, "simulate")
	for _, want := range []string{"--health-probe.failures", "--health-probe.successes", "--failures", "--successes", "--config.file", "one of text, json"} {
		if !strings.Contains(help, want) {
			t.Errorf("simulate help lacks %q:\n%s", want, help)
		}
	}
	for _, unwanted := range []string{"--web.listen-address", "--gate.drain", "--backend", "--health-probe.interval"} {
		if strings.Contains(help, unwanted) {
			t.Errorf("simulate help lists %s, which it ignores", unwanted)
		}
	}
	serve := helpOf(t, "serve")
	for _, want := range []string{"one of debug, info, warn, error", "one of logfmt, json"} {
		if !strings.Contains(serve, want) {
			t.Errorf("serve help lacks %q", want)
		}
	}
}

// Package e2e runs the real probegate binary against real loopback servers,
// a real HAProxy and a real Prometheus.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestMain builds the probegate binary once for every test in the package.
func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "probegate-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "probegate")
	build := exec.Command("go", "build", "-o", bin, "../cmd/probegate")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build probegate:", err)
		return 1
	}
	os.Setenv("PROBEGATE_E2E_BINARY", bin)
	return m.Run()
}

// binary is the path of the probegate binary TestMain built.
func binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("PROBEGATE_E2E_BINARY")
	if bin == "" {
		t.Fatal("PROBEGATE_E2E_BINARY is not set: run the e2e tests through go test, which builds it")
	}
	return bin
}

// requireTool fails the test (never skips it) when a tool the test needs is
// missing: `make deps` installs it.
func requireTool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: run `make deps` (the tests never skip a missing tool)", name)
	}
	return path
}

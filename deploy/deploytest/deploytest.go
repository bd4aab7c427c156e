// Package deploytest builds the probegate binary for the tests of the
// deployment files and reads its flags, so that a unit file or manifest
// naming a flag the binary lacks fails the build, not the first start.
package deploytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// RepoRoot is the folder of go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// Build builds ./cmd/probegate into a temporary folder and returns the
// binary's path.
func Build(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "probegate")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/probegate")
	cmd.Dir = RepoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/probegate: %v\n%s", err, out)
	}
	return bin
}

// flagName matches a long flag in kingpin's help, --[no-]name for booleans.
var flagName = regexp.MustCompile(`--(?:\[no-\])?([a-z0-9][a-z0-9.-]*)`)

// Flags lists every long flag of the binary, as `probegate --help-long`
// shows them (the commands' flags included).
func Flags(t testing.TB, bin string) map[string]bool {
	t.Helper()
	out, err := exec.Command(bin, "--help-long").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --help-long: %v\n%s", bin, err, out)
	}
	flags := map[string]bool{}
	for _, m := range flagName.FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if len(flags) == 0 {
		t.Fatalf("%s --help-long lists no flags", bin)
	}
	return flags
}

// ArgFlags lists the long flag names in a command line's arguments
// (--name or --name=value), without the --no- prefix of a negated boolean.
func ArgFlags(args []string) []string {
	var names []string
	for _, a := range args {
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// expected names the flags the deployment files rely on that belong to
// features with their own changes, so that a tree lacking one says which.
var expected = map[string]string{
	"web.health-listen-address": "the plain-HTTP listener serving only /health and /ready, for kubelet probes and balancers that cannot authenticate",
}

// CheckFlags fails the test for every flag of args the binary lacks,
// naming where it is used.
func CheckFlags(t testing.TB, where string, flags map[string]bool, args []string) {
	t.Helper()
	for _, name := range ArgFlags(args) {
		if flags[name] || flags[strings.TrimPrefix(name, "no-")] {
			continue
		}
		if what, ok := expected[name]; ok {
			t.Errorf("%s passes --%s, which this binary does not have yet: it comes with %s. Land that flag in cmd/probegate before shipping these files", where, name, what)
			continue
		}
		t.Errorf("%s passes --%s, but `probegate --help-long` has no such flag: the binary would refuse to start", where, name)
	}
}

// ReadFile reads a file relative to the repository root.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(RepoRoot(t), path))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

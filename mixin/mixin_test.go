package mixin

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// jsonnet runs `go tool jsonnet` from the repository root, as the Makefile
// does, and returns its output and whether it succeeded.
func jsonnet(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"tool", "jsonnet"}, args...)...)
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestUnknownConfigKeysAreErrors: a misspelt _config key, or an alertFor
// entry for an alert that does not exist, fails the build of every output
// with a message naming it, instead of leaving the default in place.
func TestUnknownConfigKeysAreErrors(t *testing.T) {
	for _, tc := range []struct {
		name, config, want string
	}{
		{"misspelt key", `{probegateSelecter: "job=\"lb\""}`, "unknown _config key(s) probegateSelecter"},
		{"misspelt alert", `{alertFor: {ProbegateBackendUnhealty: "1m"}}`, "alertFor names unknown alert(s) ProbegateBackendUnhealty"},
	} {
		for _, build := range []string{"rules", "dashboards"} {
			t.Run(tc.name+"/"+build, func(t *testing.T) {
				out, err := jsonnet(t, "-S", "-m", t.TempDir(), "--tla-code", "config="+tc.config,
					filepath.Join("mixin", "build", build+".jsonnet"))
				if err == nil {
					t.Fatalf("config %s was accepted", tc.config)
				}
				if !strings.Contains(out, tc.want) {
					t.Errorf("error does not say %q:\n%s", tc.want, out)
				}
			})
		}
	}
}

// TestKnownConfigKeysAreAccepted guards the check above against rejecting
// what is valid: overriding known keys, alertFor entries included.
func TestKnownConfigKeysAreAccepted(t *testing.T) {
	config := `{probegateSelector: "job=\"lb\", cluster=\"eu-1\"", alertFor: {ProbegateDown: "1m"}, dashboardTags: ["edge"]}`
	for _, build := range []string{"rules", "dashboards"} {
		out, err := jsonnet(t, "-S", "-m", t.TempDir(), "--tla-code", "config="+config,
			filepath.Join("mixin", "build", build+".jsonnet"))
		if err != nil {
			t.Errorf("%s: %v\n%s", build, err, out)
		}
	}
}

package mixin

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/probegate/probegate/internal/markdown"
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

// codeBlocks lists the fenced blocks of a Markdown file in order.
func codeBlocks(t *testing.T, path string) []markdown.CodeBlock {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return markdown.CodeBlocks(string(data))
}

// blockContaining returns the one block of lang whose text contains s.
func blockContaining(t *testing.T, blocks []markdown.CodeBlock, lang, s string) string {
	t.Helper()
	var found []string
	for _, b := range blocks {
		if b.Info == lang && strings.Contains(b.Text, s) {
			found = append(found, b.Text)
		}
	}
	if len(found) != 1 {
		t.Fatalf("README.md has %d %s blocks containing %q, want 1", len(found), lang, s)
	}
	return found[0]
}

// copyMixin copies the jsonnet of the mixin (this folder) into dir.
func copyMixin(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if ext := filepath.Ext(path); ext != ".libsonnet" && ext != ".jsonnet" && ext != ".md" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// run runs script with sh -e in dir and fails the test when it fails.
func run(t *testing.T, dir, script string, env ...string) {
	t.Helper()
	cmd := exec.Command("sh", "-ex", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("in a clean folder, README.md's commands fail: %v\n%s", err, out)
	}
}

// checkOutputs checks that out holds the rule files and dashboards, made
// with the matcher the README's example sets (as YAML and JSON quote it).
func checkOutputs(t *testing.T, out, matcher string) {
	t.Helper()
	for _, name := range []string{"probegate-alerts.yaml", "probegate-rules.yaml", "probegate-overview.json", "probegate-backend.json"} {
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Errorf("README.md's commands did not write %s: %v", name, err)
			continue
		}
		escaped := strings.ReplaceAll(matcher, `"`, `\"`)
		if !strings.Contains(string(data), matcher) && !strings.Contains(string(data), escaped) {
			t.Errorf("%s does not use the README's matcher %s", name, matcher)
		}
	}
}

// TestReadmeCommandsFromACleanFolder runs the commands of README.md as
// written, each in a new folder holding only what the README says it
// needs: a checkout (go.mod and the mixin) for the build entry points, and
// a project with the mixin vendored where jsonnet-bundler puts it for the
// jsonnet example. Only `jb` itself, which fetches from GitHub, is left
// out: its result is laid out by hand.
func TestReadmeCommandsFromACleanFolder(t *testing.T) {
	blocks := codeBlocks(t, "README.md")

	t.Run("build entry points in a checkout", func(t *testing.T) {
		dir := t.TempDir()
		for _, f := range []string{"go.mod", "go.sum"} {
			data, err := os.ReadFile(filepath.Join("..", f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		copyMixin(t, filepath.Join(dir, "mixin"))
		run(t, dir, blockContaining(t, blocks, "sh", "go tool jsonnet"))
		checkOutputs(t, filepath.Join(dir, "out"), `job="edge-lb"`)
	})

	t.Run("jsonnet example with the mixin vendored", func(t *testing.T) {
		dir := t.TempDir()
		bin := filepath.Join(t.TempDir(), "jsonnet")
		build := exec.Command("go", "build", "-o", bin, "github.com/google/go-jsonnet/cmd/jsonnet")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build jsonnet: %v\n%s", err, out)
		}
		// What `jb install github.com/probegate/probegate/mixin@main` leaves.
		copyMixin(t, filepath.Join(dir, "vendor", "github.com", "probegate", "probegate", "mixin"))
		blockContaining(t, blocks, "sh", "jb install")
		example := blockContaining(t, blocks, "jsonnet", "// probegate.jsonnet")
		if err := os.WriteFile(filepath.Join(dir, "probegate.jsonnet"), []byte(example), 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, dir, blockContaining(t, blocks, "sh", "jsonnet -J vendor"),
			"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		checkOutputs(t, filepath.Join(dir, "out"), `cluster="eu-1"`)
	})
}

// TestCertExpiryWarningIsADuration: certExpiryWarning is spliced into the
// alert in seconds, compound durations included, and a value that is not
// a duration fails the build naming it.
func TestCertExpiryWarningIsADuration(t *testing.T) {
	out, err := jsonnet(t, "-S", "-m", t.TempDir(), "--tla-code", `config={certExpiryWarning: "1w2d"}`,
		filepath.Join("mixin", "build", "rules.jsonnet"))
	if err != nil {
		t.Fatalf("1w2d was refused: %v\n%s", err, out)
	}
	rules, err := jsonnet(t, "-e", `local m = (import 'mixin/mixin.libsonnet') + {_config+:: {certExpiryWarning: '1w2d'}};
		[r.expr for g in m.prometheusAlerts.groups for r in g.rules if std.objectHas(r, 'alert') && r.alert == 'ProbegateBackendCertExpiringSoon'][0]`)
	if err != nil || !strings.Contains(rules, "- time() < 777600") {
		t.Errorf("the alert does not compare with 9 days in seconds (%v):\n%s", err, rules)
	}
	for _, bad := range []string{`"2 weeks"`, `"500ms"`, `"14"`, `14`} {
		out, err := jsonnet(t, "-S", "-m", t.TempDir(), "--tla-code", "config={certExpiryWarning: "+bad+"}",
			filepath.Join("mixin", "build", "rules.jsonnet"))
		if err == nil || !strings.Contains(out, "is not a duration of whole units") {
			t.Errorf("certExpiryWarning %s: want an error naming the value, got %v\n%s", bad, err, out)
		}
	}
}

// TestReadmeListsEveryAlertAndConfigKey: mixin/README.md's alert table
// names every alert the rules hold, and its _config table every key of
// config.libsonnet, and neither names one that does not exist.
func TestReadmeListsEveryAlertAndConfigKey(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]map[string]bool{"alert": {}, "`_config` key": {}}
	for _, table := range markdown.Tables(string(data)) {
		if len(table.Header) == 0 || listed[table.Header[0]] == nil {
			continue
		}
		for _, cell := range table.Column(table.Header[0]) {
			for _, name := range markdown.CodeSpans(cell) {
				listed[table.Header[0]][name] = true
			}
		}
	}

	out, err := jsonnet(t, "-e", `std.objectFields((import 'mixin/config.libsonnet')._config)`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var keys []string
	if err := json.Unmarshal([]byte(out), &keys); err != nil {
		t.Fatal(err)
	}
	out, err = jsonnet(t, "-e", `[r.alert for g in (import 'mixin/mixin.libsonnet').prometheusAlerts.groups for r in g.rules if std.objectHas(r, 'alert')]`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var alerts []string
	if err := json.Unmarshal([]byte(out), &alerts); err != nil {
		t.Fatal(err)
	}
	for table, names := range map[string][]string{"alert": alerts, "`_config` key": keys} {
		want := map[string]bool{}
		for _, n := range names {
			want[n] = true
			if !listed[table][n] {
				t.Errorf("README.md's %s table lacks %s", table, n)
			}
		}
		for n := range listed[table] {
			if !want[n] {
				t.Errorf("README.md's %s table names %s, which the mixin does not have", table, n)
			}
		}
	}
}

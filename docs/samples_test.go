package docs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"go.yaml.in/yaml/v3"

	"github.com/probegate/probegate/deploy/deploytest"
	"github.com/probegate/probegate/internal/markdown"
	"github.com/probegate/probegate/internal/testpki"
)

// The kinds of YAML block the documentation holds, named by the second
// word of the fence's info string; a plain "yaml" block is a probegate
// configuration file. Each kind is checked with the parser of the program
// that reads it.
const (
	kindProbegate  = ""
	kindFileSD     = "file_sd"     // a file_sd_configs target file
	kindKustomize  = "kustomize"   // a kustomization.yaml of an overlay
	kindWebConfig  = "web-config"  // --web.config.file (exporter-toolkit)
	kindHTTPConfig = "http-config" // --http.config.file of probegate maintenance (prometheus/common)
	kindPrometheus = "prometheus"  // a Prometheus configuration file
)

// defaultName is the file a block of each kind is written to unless its
// first line is a comment naming another ("# backends/pdb.yml").
var defaultName = map[string]string{
	kindProbegate:  "probegate.yml",
	kindFileSD:     "targets.yml",
	kindKustomize:  "overlay/kustomization.yaml",
	kindWebConfig:  "web.yml",
	kindHTTPConfig: "http.yml",
	kindPrometheus: "prometheus.yml",
}

// documents are the Markdown files whose samples must work, relative to
// this folder.
func documents(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../README.md"}, docs...)
}

// TestYAMLSamplesWork checks every YAML block of the documentation with
// the parser of what reads it. Each block is written into a fresh folder
// that also holds the files samples may name: the TLS files ca.pem,
// server.pem, server-key.pem, client.pem and client-key.pem, a password
// file alice.password, and for an overlay the kustomize base at
// ../probegate/deploy/kubernetes with the probegate.yml it ships.
func TestYAMLSamplesWork(t *testing.T) {
	bin := deploytest.Build(t)
	checked := map[string]int{}
	for _, doc := range documents(t) {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range markdown.CodeBlocks(string(data)) {
			if b.Lang() != "yaml" && b.Lang() != "yml" {
				continue
			}
			name := strings.TrimPrefix(doc, "../")
			if !strings.HasPrefix(name, "README") {
				name = "docs/" + name
			}
			t.Run(name+":"+strconv.Itoa(b.Line), func(t *testing.T) {
				checkSample(t, bin, b)
			})
			checked[b.Kind()]++
		}
	}
	// The documentation shows at least one of each; a sample that lost
	// its fence's kind would otherwise be checked as something else.
	for kind := range defaultName {
		if checked[kind] == 0 {
			t.Errorf("no YAML block of kind %q found in %v", kind, documents(t))
		}
	}
}

// TestExampleFileIsValid: check-config accepts example.yml without a
// warning.
func TestExampleFileIsValid(t *testing.T) {
	path, err := filepath.Abs("../example.yml")
	if err != nil {
		t.Fatal(err)
	}
	checkProbegate(t, deploytest.Build(t), path)
}

// checkSample writes the block where its kind is read and checks it.
func checkSample(t *testing.T, bin string, b markdown.CodeBlock) {
	kind := b.Kind()
	name, ok := defaultName[kind]
	if !ok {
		t.Fatalf("unknown kind %q in the fence %q: want one of yaml, yaml file_sd, yaml kustomize, yaml web-config, yaml http-config, yaml prometheus", kind, b.Info)
	}
	if first, _, _ := strings.Cut(b.Text, "\n"); strings.HasPrefix(first, "# ") {
		if f := strings.Fields(strings.TrimPrefix(first, "# "))[0]; strings.Contains(f, ".y") {
			name = f
		}
	}
	dir := provideFiles(t)
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.Text), 0o644); err != nil {
		t.Fatal(err)
	}
	switch kind {
	case kindProbegate:
		checkProbegate(t, bin, path)
	case kindFileSD:
		// As Prometheus's file discovery reads it: strictly, every label
		// name checked by the target group's own decoder.
		var groups []*targetgroup.Group
		dec := yaml.NewDecoder(bytes.NewReader([]byte(b.Text)))
		dec.KnownFields(true)
		if err := dec.Decode(&groups); err != nil {
			t.Fatalf("not a file_sd target file: %v\n%s", err, b.Text)
		}
		for i, g := range groups {
			if g == nil || len(g.Targets) == 0 {
				t.Errorf("target group %d has no targets", i)
			}
		}
	case kindKustomize:
		checkOverlay(t, dir, path)
	case kindWebConfig:
		if err := web.Validate(path); err != nil {
			t.Fatalf("not a web configuration: %v\n%s", err, b.Text)
		}
	case kindHTTPConfig:
		cfg, _, err := commoncfg.LoadHTTPConfigFile(path)
		if err == nil {
			_, err = commoncfg.NewClientFromConfig(*cfg, "docs")
		}
		if err != nil {
			t.Fatalf("not an HTTP client configuration: %v\n%s", err, b.Text)
		}
	case kindPrometheus:
		promtool, err := exec.LookPath("promtool")
		if err != nil {
			t.Fatal("promtool is missing: install the Debian package prometheus (make deps does)")
		}
		if out, err := exec.Command(promtool, "check", "config", path).CombinedOutput(); err != nil {
			t.Fatalf("promtool check config: %v\n%s\n%s", err, out, b.Text)
		}
	}
}

// checkProbegate runs the binary's check-config on a configuration file,
// which must pass without a warning, as documentation should.
func checkProbegate(t *testing.T, bin, path string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "check-config", "--config.file="+path)
	cmd.Dir = filepath.Dir(path)
	// Only the file speaks: none of the caller's PROBEGATE_ variables.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PROBEGATE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		data, _ := os.ReadFile(path)
		t.Fatalf("probegate check-config: %v\n%s%s\n%s", err, stdout.String(), stderr.String(), data)
	}
}

// provideFiles makes the folder a sample is written to, holding the
// files samples may name.
func provideFiles(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	pki := testpki.New(t)
	for _, f := range []string{pki.CAFile, pki.ServerFile, pki.ServerKeyFile, pki.ClientFile, pki.ClientKeyFile} {
		copyFile(t, f, filepath.Join(dir, filepath.Base(f)))
	}
	if err := os.WriteFile(filepath.Join(dir, "alice.password"), []byte("change-me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// checkOverlay renders the overlay at path with kubectl kustomize, next
// to a copy of the base at ../probegate/deploy/kubernetes and with the
// base's probegate.yml as the overlay's own.
func checkOverlay(t *testing.T, dir, path string) {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal("kubectl is missing: install the Debian package kubernetes-client (make deps does)")
	}
	overlay := filepath.Dir(path)
	base := filepath.Join(overlay, "..", "probegate", "deploy", "kubernetes")
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("../deploy/kubernetes/*.y*ml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no kustomize base in ../deploy/kubernetes: %v", err)
	}
	components, err := filepath.Glob("../deploy/kubernetes/components/*/*.y*ml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(files, components...) {
		to := filepath.Join(base, strings.TrimPrefix(f, "../deploy/kubernetes/"))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		copyFile(t, f, to)
	}
	copyFile(t, "../deploy/kubernetes/probegate.yml", filepath.Join(overlay, "probegate.yml"))
	var stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", overlay)
	cmd.Stderr = &stderr
	if _, err := cmd.Output(); err != nil {
		data, _ := os.ReadFile(path)
		t.Fatalf("kubectl kustomize of the overlay: %v\n%s\n%s", err, stderr.String(), data)
	}
	checkImageTags(t, path)
}

// checkImageTags: an overlay that pins probegate's image pins the release
// of the VERSION file, tagged "v" + VERSION.
func checkImageTags(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Images []struct {
			Name   string `yaml:"name"`
			NewTag string `yaml:"newTag"`
		} `yaml:"images"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	version, err := os.ReadFile("../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	want := "v" + strings.TrimSpace(string(version))
	for _, img := range k.Images {
		if img.Name == "probegate" && img.NewTag != "" && img.NewTag != want {
			t.Errorf("the overlay pins probegate to %s, not the release %s of the VERSION file", img.NewTag, want)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

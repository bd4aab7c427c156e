package e2e

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeAtomically replaces path's content through a rename, as a config
// manager does, so that the watcher never sees a half-written file.
func writeAtomically(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

func hostPort(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// TestFileDiscovery: backends listed in a watched file join the pool,
// named by their backend label or their address; relabelling drops the
// ones it drops; a file change adds, removes and renames backends while
// one that stays keeps its counters and a removed one's series go; a
// discovered backend named like a static one is left out and counted; a
// broken file keeps its backends.
func TestFileDiscovery(t *testing.T) {
	one, two, three, four := okBackend(t), okBackend(t), okBackend(t), okBackend(t)
	static := okBackend(t)
	dir := t.TempDir()
	sdDir := filepath.Join(dir, "sd")
	if err := os.Mkdir(sdDir, 0o755); err != nil {
		t.Fatal(err)
	}
	listA := filepath.Join(sdDir, "a.yml")
	writeAtomically(t, listA, fmt.Sprintf(`
- targets: [%q]
  labels: {backend: one}
- targets: [%q]
- targets: [%q]
  labels: {env: test}
`, hostPort(t, one.URL), hostPort(t, two.URL), hostPort(t, three.URL)))
	cfg := filepath.Join(dir, "probegate.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
health_probe: {interval: 200ms, timeout: 100ms}
backends: [{name: static, url: %q}]
file_sd_configs: [{files: [sd/*.yml]}]
relabel_configs:
  - {source_labels: [env], regex: test, action: drop}
`, static.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProbegate(t, "--config.file="+cfg, "--discovery.update-interval=100ms")

	twoName := hostPort(t, two.URL)
	waitFor(t, 10*time.Second, "discovered backends healthy", func() bool {
		hz := getHealthz(t, p.base)
		return len(hz) == 3 && hz["static"].State == "healthy" && hz["one"].State == "healthy" && hz[twoName].State == "healthy"
	})
	if got := metricValue(t, p.base, `probegate_discovered_backends{mechanism="file"}`); got != 2 {
		t.Errorf("probegate_discovered_backends{mechanism=\"file\"} = %v, want 2 (the third target is dropped)", got)
	}
	waitFor(t, 5*time.Second, "backend one probed a few times", func() bool {
		return metricValue(t, p.base, `probegate_probes_total{backend="one"}`) >= 3
	})
	before := metricValue(t, p.base, `probegate_probes_total{backend="one"}`)

	// one stays, two leaves, three comes as "third", and a target named
	// static clashes with the static backend.
	writeAtomically(t, listA, fmt.Sprintf(`
- targets: [%q]
  labels: {backend: one}
- targets: [%q]
  labels: {backend: third}
- targets: [%q]
  labels: {backend: static}
`, hostPort(t, one.URL), hostPort(t, three.URL), hostPort(t, four.URL)))
	waitFor(t, 10*time.Second, "two gone and third healthy", func() bool {
		hz := getHealthz(t, p.base)
		_, twoThere := hz[twoName]
		return !twoThere && hz["third"].State == "healthy"
	})
	if after := metricValue(t, p.base, `probegate_probes_total{backend="one"}`); after < before {
		t.Errorf("backend one, in both results, lost its counters: %v -> %v", before, after)
	}
	metrics := getBody(t, p.base+"/metrics")
	if strings.Contains(metrics, `backend="`+twoName+`"`) {
		t.Errorf("the removed backend %s still has series", twoName)
	}
	if got := metricValue(t, p.base, "probegate_discovery_name_clashes_total"); got != 1 {
		t.Errorf("probegate_discovery_name_clashes_total = %v, want 1", got)
	}
	if !strings.Contains(p.output.String(), "their name is taken") {
		t.Error("the clash with the static backend was not logged")
	}
	if got := metricValue(t, p.base, `probegate_probes_total{backend="static"}`); got == 0 {
		t.Error("the static backend is not probed")
	}

	// A broken file keeps its backends, while another file still adds.
	writeAtomically(t, listA, "- targets: [")
	waitFor(t, 10*time.Second, "the broken file read", func() bool {
		return metricValue(t, p.base, "prometheus_sd_file_read_errors_total") >= 1
	})
	writeAtomically(t, filepath.Join(sdDir, "b.yml"), fmt.Sprintf("- targets: [%q]\n  labels: {backend: fourth}\n", hostPort(t, four.URL)))
	waitFor(t, 10*time.Second, "fourth from the other file", func() bool {
		return getHealthz(t, p.base)["fourth"].State == "healthy"
	})
	hz := getHealthz(t, p.base)
	if len(hz) != 4 || hz["one"].State != "healthy" || hz["third"].State != "healthy" {
		t.Errorf("after the broken file: %+v, want static, one, third and fourth", hz)
	}
}

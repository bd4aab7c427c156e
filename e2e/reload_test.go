package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func okBackend(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }))
	t.Cleanup(srv.Close)
	return srv
}

func writeConfig(t *testing.T, path string, backends map[string]string, extra string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("health_probe: {interval: 200ms, timeout: 100ms}\n" + extra + "backends:\n")
	for _, name := range []string{"a", "b", "c"} {
		if url, ok := backends[name]; ok {
			fmt.Fprintf(&b, "  - {name: %s, url: %q}\n", name, url)
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// metricValue reads one unlabelled or exactly-labelled series from /metrics.
func metricValue(t testing.TB, base, series string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`)
	m := re.FindStringSubmatch(getBody(t, base+"/metrics"))
	if m == nil {
		t.Fatalf("/metrics has no series %s", series)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestReloadKeepsStateAndRejectsBadFiles: SIGHUP adds a backend while the
// unchanged one keeps its counters; a bad file is refused through POST
// /-/reload (enabled by --web.enable-lifecycle) and the running
// configuration stays.
func TestReloadKeepsStateAndRejectsBadFiles(t *testing.T) {
	a, b := okBackend(t), okBackend(t)
	path := filepath.Join(t.TempDir(), "probegate.yml")
	writeConfig(t, path, map[string]string{"a": a.URL}, "")
	p := startProbegate(t, "--config.file="+path, "--web.enable-lifecycle")

	waitFor(t, 5*time.Second, "backend a probed a few times", func() bool {
		return metricValue(t, p.base, `probegate_probes_total{backend="a"}`) >= 3
	})
	before := metricValue(t, p.base, `probegate_probes_total{backend="a"}`)

	writeConfig(t, path, map[string]string{"a": a.URL, "b": b.URL}, "")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "backend b after SIGHUP", func() bool {
		return getHealthz(t, p.base)["b"].State == "healthy"
	})
	if after := metricValue(t, p.base, `probegate_probes_total{backend="a"}`); after < before {
		t.Errorf("unchanged backend a lost its counters across reload: %v -> %v", before, after)
	}

	if err := os.WriteFile(path, []byte("backends:\n  - {name: a, url: \"http://x\", bogus: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(p.admin+"/-/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 512)
	n, _ := resp.Body.Read(body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body[:n]), "bogus") {
		t.Errorf("bad reload: %d %q, want 500 naming the unknown field", resp.StatusCode, body[:n])
	}
	if got := metricValue(t, p.base, "probegate_config_last_reload_successful"); got != 0 {
		t.Errorf("probegate_config_last_reload_successful = %v after a bad reload, want 0", got)
	}
	if hz := getHealthz(t, p.base); len(hz) != 2 || hz["a"].State != "healthy" || hz["b"].State != "healthy" {
		t.Errorf("running configuration not kept after a bad reload: %+v", hz)
	}

	resp, err = http.Get(p.admin + "/-/reload")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /-/reload = %d, want 405", resp.StatusCode)
	}
}

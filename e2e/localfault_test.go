package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOutOfDescriptorsTakesNoBackendOut reproduces the audit's finding
// with the real binary: probegate limited to 64 descriptors, clients
// holding idle connections until it has none left, so that its probes
// (a connection each, keep_alive: false) fail with EMFILE. Those failures
// are probegate's, not the backends': no backend leaves service, and the
// probes count as local.
func TestOutOfDescriptorsTakesNoBackendOut(t *testing.T) {
	const fdLimit, idleConns = 64, 300
	var urls []string
	for range 3 {
		urls = append(urls, newCountingBackend(t, statusAnswer(http.StatusOK)).URL)
	}
	path := backendsConfig(t, "health_probe: {interval: 200ms, timeout: 190ms, failures: 3, successes: 2, keep_alive: false}\n", urls...)
	addr := freeAddr(t)
	cmd := exec.Command("sh", "-c", fmt.Sprintf("ulimit -n %d && exec \"$0\" \"$@\"", fdLimit), binary(t),
		"--config.file="+path, "--web.listen-address="+addr, "--web.admin-listen-address=")
	p := &probegateProcess{cmd: cmd, base: "http://" + addr}
	p.output, p.done = startProcess(t, "probegate", cmd)
	p.waitServing(t)
	waitHealthy(t, p, 3)

	// Idle connections until probegate cannot accept more: its last
	// descriptors are spent, and those the kernel queues wait.
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range idleConns {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		conns = append(conns, c)
	}
	// Seven probe intervals without descriptors: three failures would do.
	time.Sleep(1400 * time.Millisecond)
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	waitFor(t, 10*time.Second, "probegate serving again", func() bool {
		resp, err := http.Get(p.base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	local := 0.0
	for i := range urls {
		name := fmt.Sprintf("b%d", i)
		if got := metricValue(t, p.base, fmt.Sprintf(`probegate_backend_transitions_total{backend=%q,to="unhealthy"}`, name)); got != 0 {
			t.Errorf("%s left service %v times while probegate had no descriptors", name, got)
		}
		if got := metricValue(t, p.base, fmt.Sprintf(`probegate_probe_failures_total{backend=%q,reason="transport"}`, name)); got != 0 {
			t.Errorf("%s was charged %v transport failures of probegate's own making", name, got)
		}
		local += metricValue(t, p.base, fmt.Sprintf(`probegate_probe_failures_total{backend=%q,reason="local"}`, name))
	}
	if local < 3 {
		t.Errorf("%v local probe failures counted; want the probes that found no descriptor", local)
	}
	if n := strings.Count(p.output.String(), "A probe failed for a reason of probegate's own"); n != 1 {
		t.Errorf("the cause was logged %d times, want once:\n%s", n, p.output)
	}
	t.Logf("%v probes failed locally", local)
}

// backendsConfig writes a configuration of the YAML head and the
// backends b0, b1, … at urls, and returns its path.
func backendsConfig(t *testing.T, head string, urls ...string) string {
	t.Helper()
	var cfg strings.Builder
	cfg.WriteString(head + "backends:\n")
	for i, u := range urls {
		fmt.Fprintf(&cfg, "  - {name: b%d, url: %q}\n", i, u)
	}
	path := filepath.Join(t.TempDir(), "probegate.yml")
	writeFile(t, path, cfg.String())
	return path
}

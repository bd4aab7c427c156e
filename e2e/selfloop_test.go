package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSelfLoopAtAnyPathOfAnyListenerIsRefused: a static backend at
// probegate's root, or at its health, agent or admin listener, stops it at
// start with an error naming the backend: probegate would probe and fan
// out to its own pages, its admin API among them.
func TestSelfLoopAtAnyPathOfAnyListenerIsRefused(t *testing.T) {
	real := newCountingBackend(t, statusAnswer(200))
	for _, target := range []string{"main", "health", "agent", "admin"} {
		t.Run(target, func(t *testing.T) {
			addrs := map[string]string{"main": freeAddr(t), "health": freeAddr(t), "agent": freeAddr(t), "admin": freeAddr(t)}
			p := launchProbegate(t, addrs["main"], "--config.file="+fanoutConfig(t, "", "", real.URL, "http://"+addrs[target]+"/"),
				"--web.health-listen-address="+addrs["health"], "--web.agent-listen-address="+addrs["agent"],
				"--web.admin-listen-address="+addrs["admin"], "--web.enable-lifecycle")
			if code := p.exitCode(t, 10*time.Second); code == 0 {
				t.Fatalf("probegate with a backend at its own %s listener's root exited 0", target)
			}
			if out := p.output.String(); !strings.Contains(out, `backend \"b1\"`) || !strings.Contains(out, "points at one of probegate's own listeners") {
				t.Errorf("the error does not name the backend:\n%s", out)
			}
		})
	}
}

// TestDiscoveredTargetAtTheAdminListenerIsDropped: a discovered target
// at probegate's admin listener, root path, never becomes a backend: it
// is dropped as a loop and counted.
func TestDiscoveredTargetAtTheAdminListenerIsDropped(t *testing.T) {
	real := newCountingBackend(t, statusAnswer(200))
	addr, admin := freeAddr(t), freeAddr(t)
	dir := t.TempDir()
	writeAtomically(t, filepath.Join(dir, "self.yml"), fmt.Sprintf("- targets: [%q]\n  labels: {backend: self}\n", admin))
	cfg := fanoutConfig(t, "", fmt.Sprintf("file_sd_configs: [{files: [%q]}]\n", filepath.Join(dir, "*.yml")), real.URL)
	p := launchProbegate(t, addr, "--config.file="+cfg, "--discovery.update-interval=100ms", "--web.admin-listen-address="+admin,
		"--web.enable-admin-api", "--storage.path="+t.TempDir())
	p.waitServing(t)
	waitFor(t, 10*time.Second, "the discovered target judged", func() bool {
		return metricValue(t, p.base, `probegate_discovery_dropped_targets_total{reason="loop"}`) >= 1
	})
	if hz := getHealthz(t, p.base); len(hz) != 1 {
		t.Errorf("backends %v; want only b0, the target at the admin listener dropped", hz)
	}
}

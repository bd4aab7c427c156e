package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestPeerListenerIsALoopOnEveryReplica: a discovered target at one
// replica's main listener is a loop on that replica (its own listener)
// and, once its view is read, on its peer too: both drop it with reason
// loop and agree on the pool, instead of the peer probing and fanning out
// to a probegate as if it were a backend. The peer admitted the target
// before the view arrived, and drops it when the view comes.
func TestPeerListenerIsALoopOnEveryReplica(t *testing.T) {
	cluster := startEtcdCluster(t, 1)
	real := newCountingBackend(t, statusAnswer(200))
	addrs := map[string]string{"ra": freeAddr(t), "rb": freeAddr(t)}
	dir := t.TempDir()
	writeAtomically(t, filepath.Join(dir, "peer.yml"), fmt.Sprintf("- targets: [%q]\n  labels: {backend: peer}\n", addrs["rb"]))
	cfg := replicaConfig(t, cluster, "/probegate/peerloop", "{}",
		fmt.Sprintf("fanout: {enabled: true}\nfile_sd_configs: [{files: [%q]}]\n", filepath.Join(dir, "*.yml")), []string{real.URL})
	start := func(name string) *probegateProcess {
		p := launchProbegate(t, addrs[name], "--config.file="+cfg, "--discovery.update-interval=100ms",
			"--replica.name="+name, "--storage.path="+t.TempDir(), "--web.enable-admin-api")
		p.waitServing(t)
		return p
	}
	ra := start("ra")
	waitFor(t, 10*time.Second, "ra admits the target while nothing listens there", func() bool {
		_, peer := getHealthz(t, ra.base)["peer"]
		return peer
	})
	rb := start("rb")
	for name, p := range map[string]*probegateProcess{"ra": ra, "rb": rb} {
		waitFor(t, 10*time.Second, name+" drops the target at rb's listener as a loop", func() bool {
			_, peer := getHealthz(t, p.base)["peer"]
			return !peer && metricValue(t, p.base, `probegate_discovery_dropped_targets_total{reason="loop"}`) >= 1
		})
		if hz := getHealthz(t, p.base); len(hz) != 1 {
			t.Errorf("%s: backends %v; want b0 alone", name, hz)
		}
	}
}

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// etcdCluster is a real etcd cluster of Debian's etcd-server, its members
// on loopback ports, each a process the test can kill and start again.
type etcdCluster struct {
	t       testing.TB
	members []*etcdMember
}

// etcdMember is one member: its flags stay the same across restarts, and
// its data directory keeps its identity.
type etcdMember struct {
	name, client string
	args         []string
	cmd          *exec.Cmd
	done         <-chan struct{}
}

// startEtcdCluster starts n members and waits until the cluster takes
// writes. Elections are fast (50 ms heartbeats, 500 ms election timeout),
// as a loopback cluster allows.
func startEtcdCluster(t testing.TB, n int) *etcdCluster {
	t.Helper()
	bin := requireTool(t, "etcd")
	c := &etcdCluster{t: t}
	var initial []string
	peers := make([]string, n)
	for i := range n {
		peers[i] = "http://" + freeAddr(t)
		initial = append(initial, fmt.Sprintf("m%d=%s", i, peers[i]))
	}
	dir := t.TempDir()
	for i := range n {
		client := "http://" + freeAddr(t)
		m := &etcdMember{name: fmt.Sprintf("m%d", i), client: client, args: []string{
			"--name=" + fmt.Sprintf("m%d", i),
			"--data-dir=" + filepath.Join(dir, fmt.Sprintf("m%d", i)),
			"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
			"--listen-peer-urls=" + peers[i], "--initial-advertise-peer-urls=" + peers[i],
			"--initial-cluster=" + strings.Join(initial, ","),
			"--initial-cluster-state=new", "--initial-cluster-token=probegate-e2e",
			"--heartbeat-interval=50", "--election-timeout=500", "--log-level=warn",
			// As docs/operations.md asks of operators: without them a
			// new leader restarts every lease at its full ttl. etcd
			// 3.4.23 panics on checkpointing without persistence (its
			// warning has no logger), so both or neither.
			"--experimental-enable-lease-checkpoint", "--experimental-enable-lease-checkpoint-persist",
		}}
		m.args = append([]string{bin}, m.args...)
		c.members = append(c.members, m)
		c.start(i)
	}
	c.waitHealthy(15 * time.Second)
	return c
}

// endpoints is the client URLs of every member, as a YAML flow list.
func (c *etcdCluster) endpoints() string {
	urls := make([]string, len(c.members))
	for i, m := range c.members {
		urls[i] = m.client
	}
	return "[" + strings.Join(urls, ", ") + "]"
}

// start starts member i (again).
func (c *etcdCluster) start(i int) {
	c.t.Helper()
	m := c.members[i]
	m.cmd = exec.Command(m.args[0], m.args[1:]...)
	_, m.done = startProcess(c.t, "etcd "+m.name, m.cmd)
}

// kill kills member i with SIGKILL and waits for it to exit.
func (c *etcdCluster) kill(i int) {
	c.members[i].cmd.Process.Kill()
	<-c.members[i].done
}

// waitHealthy waits until every running member reports a healthy cluster.
func (c *etcdCluster) waitHealthy(deadline time.Duration) {
	c.t.Helper()
	waitFor(c.t, deadline, "etcd cluster healthy", func() bool {
		for _, m := range c.members {
			resp, err := http.Get(m.client + "/health")
			if err != nil {
				return false
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return false
			}
		}
		return true
	})
}

// replicaConfig writes the configuration of a replica: backends b0, b1, …
// at the URLs given, the readiness block (a YAML flow mapping), extra
// top-level keys, and the maintenance entries in the cluster under
// prefix.
func replicaConfig(t testing.TB, c *etcdCluster, prefix, readiness, extra string, backends []string) string {
	t.Helper()
	return endpointsConfig(t, c.endpoints(), prefix, readiness, extra, backends)
}

// endpointsConfig is replicaConfig with the etcd endpoints given as a
// YAML flow list.
func endpointsConfig(t testing.TB, endpoints, prefix, readiness, extra string, backends []string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "readiness: %s\n", readiness)
	fmt.Fprintf(&b, "maintenance:\n  store: etcd\n  etcd: {endpoints: %s, prefix: %s, request_timeout: 2s, dial_timeout: 2s}\n", endpoints, prefix)
	b.WriteString(extra)
	b.WriteString("backends:\n")
	for i, u := range backends {
		fmt.Fprintf(&b, "  - {name: b%d, url: %q}\n", i, u)
	}
	path := filepath.Join(t.TempDir(), "probegate.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// unprobedURLs are n backend URLs of backends never probed: every one is in
// service, state unknown.
func unprobedURLs(n int) []string {
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://127.0.0.1:%d", 19001+i)
	}
	return urls
}

// startReplicas starts one probegate per configuration, named r0, r1, …,
// with the admin API on.
func startReplicas(t testing.TB, configs ...string) []*probegateProcess {
	t.Helper()
	replicas := make([]*probegateProcess, len(configs))
	for i, cfg := range configs {
		replicas[i] = startProbegate(t, "--config.file="+cfg, "--web.enable-admin-api",
			fmt.Sprintf("--replica.name=r%d", i), "--storage.path="+t.TempDir())
	}
	return replicas
}

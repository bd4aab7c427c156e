package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// The fault injectors of the fault tests and the nemesis: a TCP proxy
// between a replica and the etcd members that the test cuts and heals,
// SIGSTOP and SIGCONT of a replica, the etcd leader's death, the loss of
// the quorum, and an etcd client that writes what an operator or a broken
// tool would.

// tcpProxy forwards loopback connections to one address until the test
// cuts it. A cut is a partition in both directions: the live connections
// are closed, and new ones are accepted but never forwarded nor answered,
// as a dropped route would leave them, until the proxy is healed.
type tcpProxy struct {
	listener net.Listener
	target   string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{} // both ends of every live connection
	wg    sync.WaitGroup
}

// startProxy listens on a free loopback port and forwards to target; it
// stops when the test ends.
func startProxy(t testing.TB, target string) *tcpProxy {
	t.Helper()
	return startProxyOn(t, freeAddr(t), target)
}

// startProxyOn is startProxy listening on listen, host:port.
func startProxyOn(t testing.TB, listen, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{listener: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.serve)
	t.Cleanup(func() {
		ln.Close()
		p.closeAll()
		p.wg.Wait()
	})
	return p
}

// addr is the proxy's listening address, host:port.
func (p *tcpProxy) addr() string { return p.listener.Addr().String() }

func (p *tcpProxy) serve() {
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.conns[client] = struct{}{}
		p.mu.Unlock()
		if cut {
			// Held open and silent: the client sees a dial that succeeds
			// and a peer that never answers, as across a partition.
			continue
		}
		p.wg.Go(func() { p.forward(client) })
	}
}

func (p *tcpProxy) forward(client net.Conn) {
	server, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		p.drop(client)
		return
	}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		server.Close()
		return // the cut closes or holds client
	}
	p.conns[server] = struct{}{}
	p.mu.Unlock()
	var both sync.WaitGroup
	both.Go(func() { io.Copy(server, client); p.drop(server) })
	both.Go(func() { io.Copy(client, server); p.drop(client) })
	both.Wait()
	p.drop(client)
	p.drop(server)
}

func (p *tcpProxy) drop(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// cutOff partitions the proxy: every live connection is closed at once.
func (p *tcpProxy) cutOff() {
	p.mu.Lock()
	p.cut = true
	p.mu.Unlock()
	p.closeAll()
}

// heal ends the partition: the connections held during it are closed, so
// that the client dials again, and new ones are forwarded.
func (p *tcpProxy) heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
	p.closeAll()
}

func (p *tcpProxy) closeAll() {
	p.mu.Lock()
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	clear(p.conns)
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// replica is one probegate replica of the fault tests: its flags stay the
// same across restarts, and so do its listen address and its
// --storage.path, so that a restart finds its saved state. Its etcd
// endpoints are proxies of its own, which the test cuts to partition this
// replica alone.
type replica struct {
	t       testing.TB
	name    string
	config  string
	addr    string
	storage string
	proxies []*tcpProxy
	// extra are flags added at the next start, such as a clock offset.
	extra []string
	// via is the command prefix the binary runs through (`ip netns exec`
	// for a replica in a network namespace of its own), and placed the
	// flags that put its listeners there; both stay across restarts.
	via, placed []string

	proc *probegateProcess
	// base is the main listener's URL: /healthz, /ready, /metrics,
	// /fanout/.
	base string
	// admin is the URL of the admin listener (/api/v1/…), which the
	// tests and the history use; each launch has its own.
	admin string
}

// proxiedConfig writes a replica configuration like replicaConfig whose
// etcd endpoints are the given proxies.
func proxiedConfig(t testing.TB, proxies []*tcpProxy, prefix, readiness, extra string, backends []string) string {
	t.Helper()
	urls := make([]string, len(proxies))
	for i, p := range proxies {
		urls[i] = "http://" + p.addr()
	}
	return endpointsConfig(t, "["+strings.Join(urls, ", ")+"]", prefix, readiness, extra, backends)
}

// newReplica prepares replica name with proxies of its own to every
// member of the cluster; start runs it.
func newReplica(t testing.TB, c *etcdCluster, name, prefix, readiness, extra string, backends []string) *replica {
	t.Helper()
	r := &replica{t: t, name: name, addr: freeAddr(t), storage: t.TempDir()}
	for _, m := range c.members {
		r.proxies = append(r.proxies, startProxy(t, strings.TrimPrefix(m.client, "http://")))
	}
	r.config = proxiedConfig(t, r.proxies, prefix, readiness, extra, backends)
	return r
}

// launch runs the replica's binary and returns without waiting for it.
func (r *replica) launch() {
	r.t.Helper()
	args := append([]string{"--config.file=" + r.config, "--web.enable-admin-api",
		"--replica.name=" + r.name, "--storage.path=" + r.storage}, r.placed...)
	args = append(args, r.extra...)
	r.proc = launchProbegateVia(r.t, r.via, r.addr, args...)
	r.base = r.proc.base
	r.admin = r.proc.admin
}

// start runs the replica and waits until it serves. A port that was free
// when drawn may be taken before the replica binds it (by another test):
// at its first start, before anything knows its address, the replica then
// starts again on another one, at most three times; a restart keeps its
// address.
func (r *replica) start() {
	r.t.Helper()
	first := r.proc == nil
	for attempt := 1; ; attempt++ {
		r.launch()
		if r.proc.awaitServing(r.t, first && attempt < 3) {
			return
		}
		r.t.Logf("a port was taken before %s bound it; starting again:\n%s", r.name, r.proc.output)
		r.addr = freeAddr(r.t)
	}
}

// kill ends the replica with SIGKILL and waits for it to exit.
func (r *replica) kill() {
	r.proc.cmd.Process.Kill()
	<-r.proc.done
}

// restart kills the replica and starts it again with the flags in extra.
func (r *replica) restart(extra ...string) {
	r.t.Helper()
	r.kill()
	r.extra = extra
	r.start()
}

// stop freezes the replica with SIGSTOP, as a long GC pause, a frozen VM
// or a throttled container would; cont lets it run again.
func (r *replica) stop() { r.proc.cmd.Process.Signal(syscall.SIGSTOP) }
func (r *replica) cont() { r.proc.cmd.Process.Signal(syscall.SIGCONT) }

// cutOff partitions the replica from every etcd member; heal ends that.
func (r *replica) cutOff() {
	for _, p := range r.proxies {
		p.cutOff()
	}
}

func (r *replica) heal() {
	for _, p := range r.proxies {
		p.heal()
	}
}

// etcdClient is a client of the cluster that talks to every member
// directly, closed when the test ends: the test's hand on the store.
func (c *etcdCluster) client() *clientv3.Client {
	c.t.Helper()
	urls := make([]string, len(c.members))
	for i, m := range c.members {
		urls[i] = m.client
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: urls, DialTimeout: 2 * time.Second,
		DialKeepAliveTime: time.Second, DialKeepAliveTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cli.Close() })
	return cli
}

// leader is the index of the member that leads the cluster now, asked of
// each running member in turn.
func (c *etcdCluster) leader(cli *clientv3.Client) int {
	c.t.Helper()
	for range 50 {
		for _, m := range c.members {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := cli.Status(ctx, m.client)
			cancel()
			if err != nil || st.Leader == 0 {
				continue
			}
			for j, other := range c.members {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				ost, err := cli.Status(ctx, other.client)
				cancel()
				if err == nil && ost.Header.MemberId == st.Leader {
					return j
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatal("no etcd member names a leader that answers")
	return -1
}

// running reports whether member i runs now.
func (c *etcdCluster) running(i int) bool {
	select {
	case <-c.members[i].done:
		return false
	default:
		return true
	}
}

// loseQuorum kills every member but keep, and returns the ones killed.
func (c *etcdCluster) loseQuorum(keep int) []int {
	var killed []int
	for i := range c.members {
		if i != keep && c.running(i) {
			c.kill(i)
			killed = append(killed, i)
		}
	}
	return killed
}

// restore starts every member that is not running and waits until the
// cluster takes writes again.
func (c *etcdCluster) restore() {
	c.t.Helper()
	for i := range c.members {
		if !c.running(i) {
			c.start(i)
		}
	}
	c.waitHealthy(20 * time.Second)
}

// etcdPut, etcdDel and etcdGet are the test's own writes and reads of a key, each
// bounded by a few seconds.
func etcdPut(t testing.TB, cli *clientv3.Client, key, value string, opts ...clientv3.OpOption) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Put(ctx, key, value, opts...)
	if err != nil {
		t.Fatalf("etcd put %s: %v", key, err)
	}
	return resp.Header.Revision
}

func etcdDel(t testing.TB, cli *clientv3.Client, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cli.Delete(ctx, key); err != nil {
		t.Fatalf("etcd delete %s: %v", key, err)
	}
}

// etcdGet returns the key's value and its ModRevision, ok false when absent.
func etcdGet(t testing.TB, cli *clientv3.Client, key string) (string, int64, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, key)
	if err != nil {
		t.Fatalf("etcd get %s: %v", key, err)
	}
	if len(resp.Kvs) == 0 {
		return "", 0, false
	}
	return string(resp.Kvs[0].Value), resp.Kvs[0].ModRevision, true
}

// ghostView is a replica view as a hand or a broken tool would write it:
// a budget that holds, an update years old.
func ghostView(name string, padding int) string {
	return fmt.Sprintf(`{"name":%q,"version":"0.0.0","ready":true,"budget_holds":true,"draining":false,`+
		`"expected":1,"in_service":1,"disruptions_allowed":1,"updated":"2020-01-01T00:00:00Z","padding":%q}`,
		name, strings.Repeat("x", padding))
}

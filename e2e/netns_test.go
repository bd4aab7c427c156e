package e2e

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A replica whose network path to some backends is broken runs in a
// network namespace of its own. The namespace is joined to the host by a
// veth pair on a private /24 (10.231.N.0/24): the host side holds .1,
// where the test process forwards to etcd and to the backends on host
// loopback, and .3, where it forwards to the backends this replica is
// cut from; the namespace side holds .2, where the replica listens. Inside
// the namespace .3 is a blackhole route, so every connection to a cut
// backend fails there at once (the kernel refuses to send into a
// blackhole), while the backend itself is alive and answers everyone else.

// netnsNamePrefix starts the name of every namespace these tests make; the
// test process's pid follows it, so that a leftover of a crashed run can
// be told from the namespace of a test that runs now.
const netnsNamePrefix = "probegate-e2e-"

// netnsLinkPrefix starts the name of the host side of every veth pair
// these tests make (an interface name holds at most 15 bytes): pge, the
// pid, x, the subnet's third byte, h.
const netnsLinkPrefix = "pge"

var (
	netnsNamePattern = regexp.MustCompile(`^` + netnsNamePrefix + `(\d+)-\d+$`)
	netnsLinkPattern = regexp.MustCompile(`^` + netnsLinkPrefix + `(\d+)x\d+h$`)
)

// netns is one network namespace with its veth pair and addresses.
type netns struct {
	name string
	// host is the host side's address that the namespace reaches, cut
	// the host side's address the namespace cannot reach, inside the
	// namespace side's address.
	host, cut, inside string
	// ports hands out the ports of listeners inside the namespace, which
	// is fresh: no other process binds there.
	ports atomic.Int32
}

// ipCommand runs ip with args and fails the test, naming the command and
// its output, when it fails: the tests run as root and never skip a
// missing or refused tool.
func ipCommand(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(requireTool(t, "ip"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %s: %v: %s (the network namespace tests need iproute2 and root)", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// newNetns makes a namespace joined to the host, with loopback up, and
// removes it when the test ends, failed or not. Leftovers of a crashed
// earlier run (their pid no longer runs) are removed first.
func newNetns(t testing.TB) *netns {
	t.Helper()
	removeLeftoverNetns(t)
	n := freeNetnsSubnet(t)
	pid := syscall.Getpid()
	ns := &netns{
		name:   fmt.Sprintf("%s%d-%d", netnsNamePrefix, pid, n),
		host:   fmt.Sprintf("10.231.%d.1", n),
		inside: fmt.Sprintf("10.231.%d.2", n),
		cut:    fmt.Sprintf("10.231.%d.3", n),
	}
	ns.ports.Store(9100)
	hostLink := fmt.Sprintf("%s%dx%dh", netnsLinkPrefix, pid, n)
	insideLink := fmt.Sprintf("%s%dx%dn", netnsLinkPrefix, pid, n)
	ipCommand(t, "netns", "add", ns.name)
	t.Cleanup(func() {
		// Deleting the host side deletes its peer at once; a namespace's
		// own interfaces go only when the kernel gets round to it.
		exec.Command("ip", "link", "del", hostLink).Run()
		if out, err := exec.Command("ip", "netns", "del", ns.name).CombinedOutput(); err != nil {
			t.Errorf("remove network namespace %s: %v: %s", ns.name, err, out)
		}
	})
	ipCommand(t, "link", "add", hostLink, "type", "veth", "peer", "name", insideLink, "netns", ns.name)
	ipCommand(t, "addr", "add", ns.host+"/24", "dev", hostLink)
	ipCommand(t, "addr", "add", ns.cut+"/32", "dev", hostLink)
	ipCommand(t, "link", "set", hostLink, "up")
	ipCommand(t, "-n", ns.name, "addr", "add", ns.inside+"/24", "dev", insideLink)
	ipCommand(t, "-n", ns.name, "link", "set", insideLink, "up")
	ipCommand(t, "-n", ns.name, "link", "set", "lo", "up")
	ipCommand(t, "-n", ns.name, "route", "add", "blackhole", ns.cut+"/32")
	// The link is up at once, but the first packets wait for duplicate
	// address detection and neighbour discovery: wait until the test
	// reaches the namespace side.
	waitFor(t, 10*time.Second, "the namespace side of "+hostLink+" answers", func() bool {
		c, err := net.DialTimeout("tcp", ns.inside+":1", 200*time.Millisecond)
		if err == nil {
			c.Close()
			return true
		}
		// Refused: the address answered, nothing listens on port 1.
		return strings.Contains(err.Error(), "refused")
	})
	return ns
}

// removeLeftoverNetns removes the namespaces and host links of earlier
// runs whose test process no longer runs.
func removeLeftoverNetns(t testing.TB) {
	t.Helper()
	for _, line := range strings.Split(ipCommand(t, "netns", "list"), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		if m := netnsNamePattern.FindStringSubmatch(name); m != nil && !processRuns(m[1]) {
			ipCommand(t, "netns", "del", name)
		}
	}
	for _, line := range strings.Split(ipCommand(t, "-o", "link", "show"), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(fields[1], ":"), "@")
		if m := netnsLinkPattern.FindStringSubmatch(name); m != nil && !processRuns(m[1]) {
			ipCommand(t, "link", "del", name)
		}
	}
}

// processRuns reports whether a process with this pid runs.
func processRuns(pid string) bool {
	n, err := strconv.Atoi(pid)
	if err != nil {
		return false
	}
	return syscall.Kill(n, 0) != syscall.ESRCH
}

// freeNetnsSubnet is a third byte N for which no interface of the host
// holds an address in 10.231.N.0/24.
func freeNetnsSubnet(t testing.TB) int {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	taken := map[int]bool{}
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok {
			if v4 := ip.IP.To4(); v4 != nil && v4[0] == 10 && v4[1] == 231 {
				taken[int(v4[2])] = true
			}
		}
	}
	for n := 1; n < 255; n++ {
		if !taken[n] {
			return n
		}
	}
	t.Fatal("every subnet of 10.231.0.0/16 is taken")
	return 0
}

// via is the command prefix that runs a command inside the namespace.
func (ns *netns) via() []string { return []string{"ip", "netns", "exec", ns.name} }

// listenAddr is a new address inside the namespace for a listener
// there.
func (ns *netns) listenAddr() string {
	return fmt.Sprintf("%s:%d", ns.inside, ns.ports.Add(1))
}

// forward forwards connections from the namespace to target (host:port on
// host loopback) until the test ends, and returns the address the
// namespace dials: on the reachable side, or on the cut one.
func (ns *netns) forward(t testing.TB, target string, cut bool) string {
	t.Helper()
	host := ns.host
	if cut {
		host = ns.cut
	}
	return startProxyOn(t, host+":0", target).addr()
}

// newReplica prepares a replica that runs inside the namespace: its
// listeners there, its etcd endpoints forwarders into the namespace, and
// its backends at the URLs given (forwarders too, from forward).
func (ns *netns) newReplica(t testing.TB, c *etcdCluster, name, prefix, readiness, extra string, backends []string) *replica {
	t.Helper()
	r := &replica{t: t, name: name, addr: ns.listenAddr(), storage: t.TempDir(), via: ns.via(),
		placed: []string{"--web.admin-listen-address=" + ns.listenAddr()}}
	for _, m := range c.members {
		r.proxies = append(r.proxies, startProxyOn(t, ns.host+":0", strings.TrimPrefix(m.client, "http://")))
	}
	r.config = proxiedConfig(t, r.proxies, prefix, readiness, extra, backends)
	return r
}

// probedBackend is a loopback backend that counts the requests of its
// probe path, /healthz, notes when each came, and answers them with a
// status the test sets (200 at first); every other request is answered
// 200.
type probedBackend struct {
	*httptest.Server
	probes atomic.Int64
	status atomic.Int32

	mu       sync.Mutex
	probedAt []time.Time
}

func newProbedBackend(t testing.TB) *probedBackend {
	t.Helper()
	b := &probedBackend{}
	b.status.Store(http.StatusOK)
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			b.probes.Add(1)
			b.mu.Lock()
			b.probedAt = append(b.probedAt, time.Now())
			b.mu.Unlock()
			w.WriteHeader(int(b.status.Load()))
		}
	}))
	t.Cleanup(b.Close)
	return b
}

// secondProber is when, after since, the backend began to be probed by
// two replicas: the first probe that came less than 0.6 interval after
// the one before it, provided the probe after next did too. One prober's
// probes come an interval apart on a grid; two probers' interleave, and
// of each two gaps in a row one is at most half an interval. The second
// short gap tells them from one prober whose probe was late, after which
// the next came on time. It is false when that has not happened yet.
func (b *probedBackend) secondProber(since time.Time, interval time.Duration) (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	start, _ := slices.BinarySearchFunc(b.probedAt, since, func(at, since time.Time) int { return at.Compare(since) })
	probes := b.probedAt[start:]
	short := func(j int) bool { return probes[j].Sub(probes[j-1]) < interval*6/10 }
	for j := 1; j+2 < len(probes); j++ {
		if short(j) && short(j+2) {
			return probes[j], true
		}
	}
	return time.Time{}, false
}

// newProbedBackends starts n probedBackends.
func newProbedBackends(t testing.TB, n int) []*probedBackend {
	t.Helper()
	backends := make([]*probedBackend, n)
	for i := range backends {
		backends[i] = newProbedBackend(t)
	}
	return backends
}

// probesDuring counts the probes reaching each backend during window.
func probesDuring(backends []*probedBackend, window time.Duration) []int64 {
	counts := make([]int64, len(backends))
	for i, b := range backends {
		counts[i] = b.probes.Load()
	}
	time.Sleep(window)
	for i, b := range backends {
		counts[i] = b.probes.Load() - counts[i]
	}
	return counts
}

// sumInts is the sum of counts.
func sumInts(counts []int64) int64 {
	var sum int64
	for _, n := range counts {
		sum += n
	}
	return sum
}

// backendURLsOf are the backends' URLs.
func backendURLsOf(backends []*probedBackend) []string {
	urls := make([]string, len(backends))
	for i, b := range backends {
		urls[i] = b.URL
	}
	return urls
}

// rigProbing is the probe timing of the namespace tests: a dead path is
// out of service after 2 × 500ms.
const (
	rigInterval = 500 * time.Millisecond
	rigFailures = 2
	rigProbing  = "health_probe: {path: /healthz, interval: 500ms, timeout: 300ms, failures: 2, successes: 1}\n"
)

// TestNetnsRigCutsPaths proves the rig: a replica in a namespace of its
// own, cut from 10 of 40 backends, sees exactly those 10 unhealthy and
// unreachable, through forwarders that reach etcd and the other 30, while
// a replica on the host sees all 40 healthy; and no probe of the cut
// replica reaches a cut backend.
func TestNetnsRigCutsPaths(t *testing.T) {
	backends := newProbedBackends(t, 40)
	cluster := startEtcdCluster(t, 1)
	ns := newNetns(t)
	urls := backendURLsOf(backends)
	nsURLs := make([]string, len(backends))
	for i, b := range backends {
		nsURLs[i] = "http://" + ns.forward(t, strings.TrimPrefix(b.URL, "http://"), i < 10)
	}
	host := newReplica(t, cluster, "host", "/probegate/rig", "{min_available: 1}", rigProbing, urls)
	cut := ns.newReplica(t, cluster, "cut", "/probegate/rig", "{min_available: 1}", rigProbing, nsURLs)
	host.start()
	cut.start()

	started := time.Now()
	waitFor(t, 10*time.Second, "the cut replica sees b0…b9 unhealthy and the rest healthy, the host replica all healthy", func() bool {
		onHost, inNs := getHealthz(t, host.base), getHealthz(t, cut.base)
		for i := range backends {
			name := fmt.Sprintf("b%d", i)
			want := "healthy"
			if i < 10 {
				want = "unhealthy"
			}
			if onHost[name].State != "healthy" || inNs[name].State != want || inNs[name].Reachable != (i >= 10) {
				return false
			}
		}
		return true
	})
	t.Logf("the cut replica judged its 40 backends %v after both started", time.Since(started).Round(time.Millisecond))
	// The cut replica reads the store through the namespace's forwarders.
	waitFor(t, 10*time.Second, "the cut replica synced with etcd", func() bool {
		return listBackends(t, cut.admin).Store.Healthy
	})

	// Both probe the 30 reachable backends; only the host replica probes
	// the 10 cut ones: per backend, those get half as many probes. The
	// bound leaves room for a probe more or less at the window's edges.
	counts := probesDuring(backends, 8*rigInterval)
	perCut := float64(sumInts(counts[:10])) / 10
	perRest := float64(sumInts(counts[10:])) / 30
	t.Logf("per backend in %v: %.1f probes of a cut one, %.1f of a reachable one", 8*rigInterval, perCut, perRest)
	if perRest < 12 || perCut > 0.7*perRest {
		t.Errorf("per backend in %v: %.1f probes of a cut one, %.1f of a reachable one; want about 8 and 16: a probe of the cut replica reached a cut backend, or the replicas did not probe",
			8*rigInterval, perCut, perRest)
	}
}

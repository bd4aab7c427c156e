package e2e

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// zone is a DNS server's records for probegate.test: one SRV name whose
// targets the test changes, their A records, and a switch that makes the
// SRV lookups fail.
type zone struct {
	mu      sync.Mutex
	srv     map[string]uint16 // SRV target host -> port
	failSRV bool
}

const srvName = "_pdb._tcp.probegate.test."

func (z *zone) set(srv map[string]uint16, fail bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.srv, z.failSRV = srv, fail
}

func (z *zone) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	z.mu.Lock()
	defer z.mu.Unlock()
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	q := req.Question[0]
	hdr := func(t uint16) dns.RR_Header {
		return dns.RR_Header{Name: q.Name, Rrtype: t, Class: dns.ClassINET, Ttl: 1}
	}
	switch {
	case q.Name == srvName && q.Qtype == dns.TypeSRV:
		if z.failSRV {
			m.Rcode = dns.RcodeServerFailure
			break
		}
		for host, port := range z.srv {
			m.Answer = append(m.Answer, &dns.SRV{Hdr: hdr(dns.TypeSRV), Priority: 1, Weight: 1, Port: port, Target: host})
		}
	case strings.HasSuffix(q.Name, ".probegate.test.") && q.Qtype == dns.TypeA:
		m.Answer = append(m.Answer, &dns.A{Hdr: hdr(dns.TypeA), A: net.IPv4(127, 0, 0, 1)})
	case strings.HasSuffix(q.Name, ".probegate.test."):
		// No AAAA records: an empty answer.
	default:
		m.Rcode = dns.RcodeNameError
	}
	w.WriteMsg(m)
}

// startDNS serves z on port 53 of a loopback address of its own: a
// resolv.conf names a server without a port, and port 53 of 127.0.0.1 may
// be taken, while the whole of 127.0.0.0/8 is loopback. It returns the
// address.
func startDNS(t *testing.T, z *zone) string {
	t.Helper()
	for range 20 {
		ip := fmt.Sprintf("127.53.%d.%d", rand.IntN(256), 1+rand.IntN(254))
		addr := net.JoinHostPort(ip, "53")
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			continue
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			pc.Close()
			continue
		}
		udp := &dns.Server{PacketConn: pc, Handler: z}
		tcp := &dns.Server{Listener: ln, Handler: z}
		var wg sync.WaitGroup
		for _, s := range []*dns.Server{udp, tcp} {
			started := make(chan struct{})
			s.NotifyStartedFunc = func() { close(started) }
			wg.Go(func() { s.ActivateAndServe() })
			<-started
		}
		t.Cleanup(func() {
			udp.Shutdown()
			tcp.Shutdown()
			wg.Wait()
		})
		return ip
	}
	t.Fatal("no free port 53 on 127.53.0.0/16 after 20 tries (binding it needs root)")
	return ""
}

// startProbegateWithResolver runs the binary in a mount namespace of its
// own where /etc/resolv.conf names only the given DNS server, so that both
// the DNS discovery and the probes' name lookups ask it. It needs root and
// util-linux's unshare and mount, and fails without them.
func startProbegateWithResolver(t *testing.T, dnsIP string, args ...string) *probegateProcess {
	t.Helper()
	unshare, mount := requireTool(t, "unshare"), requireTool(t, "mount")
	conf := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(conf, []byte("nameserver "+dnsIP+"\noptions timeout:1 attempts:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	p := &probegateProcess{base: "http://" + addr}
	args = withAdminListener(t, p, args)
	script := `"$1" --bind "$2" /etc/resolv.conf || exit 1; shift 2; exec "$@"`
	p.cmd = exec.Command(unshare, append([]string{"--mount", "sh", "-c", script, "sh", mount, conf, binary(t), "--web.listen-address=" + addr}, args...)...)
	p.output, p.done = startProcess(t, "probegate", p.cmd)
	p.waitServing(t)
	return p
}

// TestDNSDiscovery: a backend set from SRV records on a real DNS server,
// named by relabelling, follows the records: one stays with its counters,
// one leaves, one comes; when the SRV lookups fail the last backends stay.
func TestDNSDiscovery(t *testing.T) {
	b1, b2, b3 := okBackend(t), okBackend(t), okBackend(t)
	port := func(rawURL string) uint16 {
		_, p, err := net.SplitHostPort(hostPort(t, rawURL))
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			t.Fatal(err)
		}
		return uint16(n)
	}
	z := &zone{}
	z.set(map[string]uint16{"b1.probegate.test.": port(b1.URL), "b2.probegate.test.": port(b2.URL)}, false)
	dnsIP := startDNS(t, z)

	cfg := filepath.Join(t.TempDir(), "probegate.yml")
	if err := os.WriteFile(cfg, []byte(`
health_probe: {interval: 200ms, timeout: 100ms}
dns_sd_configs: [{names: [`+strings.TrimSuffix(srvName, ".")+`], type: SRV, refresh_interval: 200ms}]
relabel_configs:
  - {source_labels: [__meta_dns_srv_record_target], regex: '([^.]+)\..*', target_label: backend}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProbegateWithResolver(t, dnsIP, "--config.file="+cfg, "--discovery.update-interval=100ms")

	waitFor(t, 10*time.Second, "b1 and b2 from SRV records, healthy through their A records", func() bool {
		hz := getHealthz(t, p.base)
		return len(hz) == 2 && hz["b1"].State == "healthy" && hz["b2"].State == "healthy"
	})
	if got := metricValue(t, p.base, `probegate_discovered_backends{mechanism="dns"}`); got != 2 {
		t.Errorf(`probegate_discovered_backends{mechanism="dns"} = %v, want 2`, got)
	}
	before := metricValue(t, p.base, `probegate_probes_total{backend="b1"}`)

	z.set(map[string]uint16{"b1.probegate.test.": port(b1.URL), "b3.probegate.test.": port(b3.URL)}, false)
	waitFor(t, 10*time.Second, "b2 gone and b3 healthy", func() bool {
		hz := getHealthz(t, p.base)
		_, b2There := hz["b2"]
		return !b2There && hz["b3"].State == "healthy"
	})
	if after := metricValue(t, p.base, `probegate_probes_total{backend="b1"}`); after < before {
		t.Errorf("b1, in both answers, lost its counters: %v -> %v", before, after)
	}

	z.set(nil, true)
	failures := metricValue(t, p.base, "prometheus_sd_dns_lookup_failures_total")
	// Three refreshes fail: had the first emptied the pool, its update
	// (batched every 100ms) would have landed before the third.
	waitFor(t, 10*time.Second, "three failed SRV lookups", func() bool {
		return metricValue(t, p.base, "prometheus_sd_dns_lookup_failures_total") >= failures+3
	})
	if hz := getHealthz(t, p.base); len(hz) != 2 || hz["b1"].State != "healthy" || hz["b3"].State != "healthy" {
		t.Errorf("after failed lookups: %+v, want b1 and b3 kept", hz)
	}
}

package probe

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// haproxyBenchConfig is HAProxy checking every backend as the probing
// benchmark's probers do: GET /healthz every second, a 500ms timeout, fall
// 3 and rise 2, a new connection per check (HAProxy's checks never keep
// one). HAProxy spreads the checks of a backend's servers evenly over the
// interval. The frontend only exists because HAProxy refuses to start
// without a listener; nothing connects to it.
const haproxyBenchConfig = `global
    maxconn 1000

defaults
    mode http
    timeout connect 500ms
    timeout client 10s
    timeout server 10s
    timeout check 500ms

frontend unused
    bind %s
    default_backend probed

backend probed
    option httpchk GET /healthz
    default-server inter 1s fall 3 rise 2
`

// haproxyBench runs HAProxy's checks over the bench server's backends.
type haproxyBench struct {
	bin string
	srv *benchServer
	dir string
	// baseKiB is the resident memory of HAProxy checking one backend, the
	// baseline its growth per backend is measured from.
	baseKiB int64
}

// newHAProxyBench finds HAProxy (make deps installs it) and measures its
// baseline memory.
func newHAProxyBench(b *testing.B, srv *benchServer) *haproxyBench {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		b.Fatalf("haproxy is not installed: make deps installs the Debian package haproxy (%v)", err)
	}
	h := &haproxyBench{bin: bin, srv: srv, dir: b.TempDir()}
	cmd := h.start(b, 0, srv.addrs[:1])
	time.Sleep(probingBenchWarmUp)
	h.baseKiB = readProcRSSKiB(b, strconv.Itoa(cmd.Process.Pid))
	h.stop(cmd)
	return h
}

// haproxyShare is the most backends one HAProxy process checks. HAProxy
// keeps a descriptor per server it checks beside two per connection of
// its maxconn, and refuses to start when its open-file limit cannot hold
// them all: 20,000 servers need 22,017, over the limit of 20,000 that
// cannot be raised. More backends than haproxyShare are shared evenly
// between as many processes as it takes, their CPU and memory summed.
const haproxyShare = 15000

// startShares runs the HAProxy processes that check addrs between them.
func (h *haproxyBench) startShares(b *testing.B, addrs []string) []*exec.Cmd {
	processes := (len(addrs) + haproxyShare - 1) / haproxyShare
	cmds := make([]*exec.Cmd, processes)
	for i := range processes {
		cmds[i] = h.start(b, i, addrs[i*len(addrs)/processes:(i+1)*len(addrs)/processes])
	}
	return cmds
}

// start runs HAProxy process number share in the foreground checking
// addrs.
func (h *haproxyBench) start(b *testing.B, share int, addrs []string) *exec.Cmd {
	var cfg strings.Builder
	fmt.Fprintf(&cfg, haproxyBenchConfig, freeLoopbackAddr(b))
	for i, addr := range addrs {
		fmt.Fprintf(&cfg, "    server b%d %s check\n", i, addr)
	}
	path := filepath.Join(h.dir, fmt.Sprintf("haproxy-%d.cfg", share))
	if err := os.WriteFile(path, []byte(cfg.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(h.bin, "-f", path, "-db", "-q")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatalf("start haproxy: %v", err)
	}
	return cmd
}

func (h *haproxyBench) stop(cmd *exec.Cmd) {
	cmd.Process.Kill()
	cmd.Wait()
}

// run lets HAProxy check every backend for the warm-up and duration, and
// measures its steady window: the checks are the requests the bench
// server answered meanwhile, nothing else asking it, and the CPU and the
// growth of resident memory over the baseline are summed over HAProxy's
// processes.
func (h *haproxyBench) run(b *testing.B, duration time.Duration) probingBenchResult {
	cmds := h.startShares(b, h.srv.addrs)
	defer func() {
		for _, cmd := range cmds {
			h.stop(cmd)
		}
	}()
	cpu := func() time.Duration {
		var sum time.Duration
		for _, cmd := range cmds {
			sum += procCPU(b, strconv.Itoa(cmd.Process.Pid))
		}
		return sum
	}
	time.Sleep(probingBenchWarmUp)
	warmChecks, warmCPU, warm := h.srv.requests(b), cpu(), time.Now()
	time.Sleep(duration)
	endChecks, endCPU, elapsed := h.srv.requests(b), cpu(), time.Since(warm)
	var rss int64
	for _, cmd := range cmds {
		rss += readProcRSSKiB(b, strconv.Itoa(cmd.Process.Pid)) - h.baseKiB
	}
	checks := endChecks - warmChecks
	if checks <= 0 {
		b.Fatal("HAProxy checked nothing in the steady window")
	}
	n := len(h.srv.addrs)
	if perSecond := float64(checks) / elapsed.Seconds(); perSecond < 0.9*float64(n) {
		b.Errorf("HAProxy checked %.0f backends per second of %d: it did not keep up, the numbers would flatter it", perSecond, n)
	}
	return probingBenchResult{
		cpuPerProbe:     perProbe(endCPU-warmCPU, checks),
		rssPerBackend:   float64(rss) / float64(max(n-len(cmds), 1)),
		probesPerSecond: float64(checks) / elapsed.Seconds(),
		processes:       len(cmds),
	}
}

// procCPU is the user plus system CPU time process pid used so far, every
// thread included, from /proc/<pid>/stat (in clock ticks of 10ms: the
// steady window is long enough for that not to matter).
func procCPU(b *testing.B, pid string) time.Duration {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from after it. utime and stime are fields 14 and 15.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 13 {
		b.Fatalf("/proc/%s/stat: too few fields", pid)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Fatalf("/proc/%s/stat: %v", pid, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTicksPerSecond
}

// clockTicksPerSecond is USER_HZ, the unit of CPU times in /proc on
// Linux.
const clockTicksPerSecond = 100

// freeLoopbackAddr is a loopback address nothing listens on at the moment.
func freeLoopbackAddr(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// blackboxModule is the blackbox_exporter module the benchmark builds.
const blackboxModule = "github.com/prometheus/blackbox_exporter@v0.27.0"

// buildBlackbox builds blackbox_exporter from the Go module proxy into a
// temporary directory and returns the binary, or "" after saying why it
// could not: it is an optional comparison.
func buildBlackbox(b *testing.B) string {
	dir := b.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", blackboxModule)
	cmd.Env = append(os.Environ(), "GOBIN="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Logf("blackbox_exporter skipped: %s cannot be built from the Go module proxy: %v: %s", blackboxModule, err, strings.TrimSpace(string(out)))
		return ""
	}
	return filepath.Join(dir, "blackbox_exporter")
}

// blackboxBenchConfig is blackbox_exporter's http module as a probe would
// use it: GET, 2xx expected, redirects not followed, IPv4.
const blackboxBenchConfig = `modules:
  http_2xx:
    prober: http
    timeout: 500ms
    http:
      method: GET
      preferred_ip_protocol: ip4
      follow_redirects: false
`

// runBlackboxBench has blackbox_exporter probe every backend once a
// second, as Prometheus would ask it (/probe?target=...), from a
// goroutine and ticker per backend in this process, and measures
// blackbox_exporter's own CPU and memory.
func runBlackboxBench(b *testing.B, bin string, srv *benchServer, duration time.Duration) probingBenchResult {
	dir := b.TempDir()
	cfg := filepath.Join(dir, "blackbox.yml")
	if err := os.WriteFile(cfg, []byte(blackboxBenchConfig), 0o644); err != nil {
		b.Fatal(err)
	}
	listen := freeLoopbackAddr(b)
	cmd := exec.Command(bin, "--config.file="+cfg, "--web.listen-address="+listen, "--log.level=error")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatalf("start blackbox_exporter: %v", err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	pid := strconv.Itoa(cmd.Process.Pid)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}, Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := client.Get("http://" + listen + "/-/healthy"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("blackbox_exporter did not start within 10s")
		}
	}
	baseKiB := readProcRSSKiB(b, pid)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, addr := range srv.addrs {
		target := "http://" + listen + "/probe?module=http_2xx&target=" + url.QueryEscape("http://"+addr+"/healthz")
		wg.Go(func() {
			select {
			case <-time.After(time.Duration(i) * time.Second / time.Duration(len(srv.addrs))):
			case <-ctx.Done():
				return
			}
			ticker := time.NewTicker(time.Second)
			defer ticker.Stop()
			for {
				if resp, err := client.Get(target); err == nil {
					resp.Body.Close()
				}
				select {
				case <-ticker.C:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	time.Sleep(probingBenchWarmUp)
	warmProbes, warmCPU, warm := srv.requests(b), procCPU(b, pid), time.Now()
	time.Sleep(duration)
	endProbes, endCPU, elapsed := srv.requests(b), procCPU(b, pid), time.Since(warm)
	rss := readProcRSSKiB(b, pid)
	cancel()
	wg.Wait()
	probes := endProbes - warmProbes
	if probes <= 0 {
		b.Fatal("blackbox_exporter probed nothing in the steady window")
	}
	return probingBenchResult{
		cpuPerProbe:     perProbe(endCPU-warmCPU, probes),
		rssPerBackend:   float64(rss-baseKiB) / float64(len(srv.addrs)),
		probesPerSecond: float64(probes) / elapsed.Seconds(),
	}
}

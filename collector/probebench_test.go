package collector

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/config"
)

// The probing benchmark's knobs, read from the environment so that a quick
// run needs no code change: PROBEGATE_BENCH_BACKENDS (default 5000) and
// PROBEGATE_BENCH_DURATION (default 30s).
const (
	benchServerEnv   = "PROBEGATE_BENCH_SERVER"
	benchBackendsEnv = "PROBEGATE_BENCH_BACKENDS"
	benchDurationEnv = "PROBEGATE_BENCH_DURATION"
)

// BenchmarkProbing5000 probes 5,000 loopback backends at a 1s interval and
// reports the SPEC section 11 budget numbers:
//
//   - cpu-us/probe: user+sys CPU of this process per probe in steady state,
//     from the end of a warm-up (every backend probed once, its connection
//     open) to the end of the run; setup-cpu-us/probe counts from the start,
//     connection setup included.
//   - rss-KiB/backend: the growth of this process's resident memory from
//     before the pool was built to the end of the run, per backend.
//   - lag-p99-ms: how late probes started against their schedule.
//   - probes/s over the steady window.
//
// The backends live in a child process, this test binary re-executed in
// server mode, so their cost is not counted (they still share the CPUs).
func BenchmarkProbing5000(b *testing.B) {
	n := benchEnvInt(b, benchBackendsEnv, 5000)
	duration := benchEnvDuration(b, benchDurationEnv, 30*time.Second)
	if err := raiseFileLimit(); err != nil {
		b.Fatal(err)
	}
	addrs := startBenchServer(b, n)

	for range b.N {
		m := runProbingBench(b, addrs, duration)
		b.ReportMetric(m.cpuPerProbe, "cpu-us/probe")
		b.ReportMetric(m.setupCPUPerProbe, "setup-cpu-us/probe")
		b.ReportMetric(m.rssPerBackend, "rss-KiB/backend")
		b.ReportMetric(m.lagP99, "lag-p99-ms")
		b.ReportMetric(m.probesPerSecond, "probes/s")
		b.ReportMetric(m.allocsPerProbe, "allocs/probe")
		b.ReportMetric(m.bytesPerProbe, "B/probe")
		b.ReportMetric(0, "ns/op")
		b.Logf("%d backends for %s: %.0f probes/s, %.1f µs CPU/probe in steady state (budget 40; %.1f counting connection setup), %.1f KiB RSS/backend (budget 16), lag p50 %.2f ms p99 %.2f ms max %.2f ms (budget p99 100)",
			len(addrs), duration, m.probesPerSecond, m.cpuPerProbe, m.setupCPUPerProbe, m.rssPerBackend, m.lagP50, m.lagP99, m.lagMax)
	}
}

type probingBenchResult struct {
	cpuPerProbe, setupCPUPerProbe  float64
	rssPerBackend, probesPerSecond float64
	lagP50, lagP99, lagMax         float64
	allocsPerProbe, bytesPerProbe  float64
}

// probingBenchWarmUp is how long the benchmark probes before its steady
// window: every first probe falls within the first second.
const probingBenchWarmUp = 2 * time.Second

func runProbingBench(b *testing.B, addrs []string, duration time.Duration) probingBenchResult {
	cfg := testConfig()
	cfg.HealthProbe.Timeout = model.Duration(500 * time.Millisecond)
	for i, addr := range addrs {
		cfg.Backends = append(cfg.Backends, config.Backend{Name: fmt.Sprintf("backend-%d", i), URL: "http://" + addr})
	}
	// Every lag slot is written before the baseline is taken, so the
	// recorder's own memory is not counted against the backends.
	lags := make([]time.Duration, int(float64(len(addrs))*(duration+probingBenchWarmUp+time.Second).Seconds()))
	for i := range lags {
		lags[i] = -1
	}
	var lagCount, probes, notOK atomic.Int64

	runtime.GC()
	debug.FreeOSMemory()
	rssBefore := readRSSKiB(b)

	pool, err := NewPool(cfg, log.NewNopLogger())
	if err != nil {
		b.Fatal(err)
	}
	// The observer stands in for the probe duration histogram probegate
	// feeds from it.
	prober := NewProber(pool, log.NewNopLogger(), func(r Result) {
		probes.Add(1)
		if r.Class != ClassOK {
			notOK.Add(1)
		}
	})
	prober.onLag = func(lag time.Duration) {
		if i := lagCount.Add(1) - 1; i < int64(len(lags)) {
			lags[i] = lag
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	setupCPU := processCPU(b)
	wg.Go(func() { prober.Run(ctx) })
	time.Sleep(probingBenchWarmUp)
	var warmMem, endMem runtime.MemStats
	runtime.ReadMemStats(&warmMem)
	warmProbes, warmCPU, warm := probes.Load(), processCPU(b), time.Now()
	time.Sleep(duration)
	endCPU, endProbes, elapsed := processCPU(b), probes.Load(), time.Since(warm)
	runtime.ReadMemStats(&endMem)
	rssAfter := readRSSKiB(b)
	cancel()
	wg.Wait()

	if n := notOK.Load(); n > 0 {
		b.Errorf("%d probes were not ok: the numbers would measure failures, not probing", n)
	}
	steadyProbes := endProbes - warmProbes
	if steadyProbes <= 0 {
		b.Fatal("no probe finished in the steady window")
	}
	recorded := lags[:min(int(lagCount.Load()), len(lags))]
	slices.Sort(recorded)
	quantile := func(q float64) float64 {
		return float64(recorded[int(q*float64(len(recorded)-1))]) / float64(time.Millisecond)
	}
	perProbe := func(cpu time.Duration, n int64) float64 {
		return float64(cpu) / float64(time.Microsecond) / float64(n)
	}
	return probingBenchResult{
		cpuPerProbe:      perProbe(endCPU-warmCPU, steadyProbes),
		setupCPUPerProbe: perProbe(endCPU-setupCPU, endProbes),
		rssPerBackend:    float64(rssAfter-rssBefore) / float64(len(addrs)),
		probesPerSecond:  float64(steadyProbes) / elapsed.Seconds(),
		lagP50:           quantile(0.5),
		lagP99:           quantile(0.99),
		lagMax:           quantile(1),
		allocsPerProbe:   float64(endMem.Mallocs-warmMem.Mallocs) / float64(steadyProbes),
		bytesPerProbe:    float64(endMem.TotalAlloc-warmMem.TotalAlloc) / float64(steadyProbes),
	}
}

// startBenchServer re-executes the test binary as the backend server with
// n loopback listeners and returns their addresses. The server exits when
// its stdin closes, that is when this process ends or the benchmark's
// cleanup closes it.
func startBenchServer(b *testing.B, n int) []string {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchServerEnv+"=1", benchBackendsEnv+"="+strconv.Itoa(n))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start the bench server: %v", err)
	}
	b.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	addrs := make([]string, 0, n)
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if lines.Text() == "ready" {
			go io.Copy(io.Discard, stdout)
			return addrs
		}
		addrs = append(addrs, lines.Text())
	}
	b.Fatalf("the bench server ended before it was ready: %v", lines.Err())
	return nil
}

// runBenchServer is the bench server's main: it listens on as many
// loopback ports as asked, prints each address and then "ready", and
// answers every request with 200 "ok" until stdin closes.
func runBenchServer() int {
	n, err := strconv.Atoi(os.Getenv(benchBackendsEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench server:", err)
		return 1
	}
	if err := raiseFileLimit(); err != nil {
		fmt.Fprintln(os.Stderr, "bench server:", err)
		return 1
	}
	body := []byte("ok")
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header()["Content-Length"] = []string{"2"}
			w.Write(body)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	out := bufio.NewWriter(os.Stdout)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench server:", err)
			return 1
		}
		go srv.Serve(l)
		fmt.Fprintln(out, l.Addr())
	}
	fmt.Fprintln(out, "ready")
	out.Flush()
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// raiseFileLimit lifts the soft open-file limit to the hard one: 5,000
// backends need 5,000 connections on each side, and the server as many
// listeners again.
func raiseFileLimit() error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("read the open-file limit: %w", err)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("raise the open-file limit to %d: %w", lim.Max, err)
	}
	return nil
}

// readRSSKiB reads this process's resident set size from /proc.
func readRSSKiB(b *testing.B) int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("parse VmRSS %q: %v", rest, err)
			}
			return kib
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// processCPU is the user plus system CPU time this process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchEnvInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

func benchEnvDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("%s=%q: want a positive duration such as 10s", name, v)
	}
	return d
}

// BenchmarkProbeRequest measures one keep-alive probe of a loopback
// backend, server included, for its allocations.
func BenchmarkProbeRequest(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	client, err := NewHTTPClient("bench", config.HTTPClientConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer client.CloseIdleConnections()
	req, err := NewProbeRequest(srv.URL + "/healthz")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if r := ProbeRequest(context.Background(), client, req, time.Second); r.Class != ClassOK {
			b.Fatalf("probe: %+v", r)
		}
	}
}

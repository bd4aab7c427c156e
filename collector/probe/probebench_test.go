package probe

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
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

	"github.com/probegate/probegate/collector/discovery"
	"github.com/probegate/probegate/collector/fanout"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// The probing benchmark's knobs, read from the environment so that a quick
// run needs no code change: PROBEGATE_BENCH_BACKENDS (default 5000) and
// PROBEGATE_BENCH_DURATION (default 30s).
const (
	benchServerEnv   = "PROBEGATE_BENCH_SERVER"
	benchBackendsEnv = "PROBEGATE_BENCH_BACKENDS"
	benchDurationEnv = "PROBEGATE_BENCH_DURATION"
	benchFanoutEnv   = "PROBEGATE_BENCH_FANOUT_EVERY"
	// benchHeapProfileEnv names a file for a heap profile of probegate's
	// phase, taken at the end of its steady window.
	benchHeapProfileEnv = "PROBEGATE_BENCH_HEAPPROFILE"
)

// The budgets of probing 5,000 loopback backends at 1s with probes and
// fan-out both in use (docs/design.md, "Budgets").
const (
	budgetLagP99         = 100 * time.Millisecond
	budgetCPUPerProbe    = 120 * time.Microsecond
	budgetRSSPerBackendK = 48
)

// probingBenchFanoutEvery is how often the benchmark runs a fan-out round
// to every backend, through the same clients as the probes, unless
// PROBEGATE_BENCH_FANOUT_EVERY says otherwise (0 turns fan-out off, to
// see what it costs).
const probingBenchFanoutEvery = 5 * time.Second

// BenchmarkProbing5000 probes 5,000 loopback backends at a 1s interval,
// with fan-out rounds to all of them through the same clients, and reports
// the budget numbers beside those of a minimal net/http prober over the
// same backends in the same run:
//
//   - cpu-us/probe: user+sys CPU of this process per probe in steady state,
//     from the end of a warm-up (every backend probed once, its connection
//     open) to the end of the run, the fan-out rounds' CPU included;
//     setup-cpu-us/probe counts from the start, connection setup included.
//   - rss-KiB/backend: the growth of this process's resident memory from
//     before the pool was built to the end of the run, per backend.
//   - lag-p99-ms: how late probes started against their schedule.
//   - probes/s over the steady window.
//   - nethttp-*: the same for the minimal prober (a goroutine and ticker per
//     backend, one shared http.Transport, GET with a timeout, body read),
//     and cpu-ratio and rss-ratio, probegate's over it.
//
// The benchmark fails when a budget is exceeded. The backends live in a
// child process, this test binary re-executed in server mode, so their
// cost is not counted (they still share the CPUs).
func BenchmarkProbing5000(b *testing.B) {
	n := benchEnvInt(b, benchBackendsEnv, 5000)
	duration := benchEnvDuration(b, benchDurationEnv, 30*time.Second)
	// This side holds a probe connection per backend and, during a
	// fan-out round, at most one more; the server as many again and a
	// listener per backend.
	if err := raiseFileLimit(3*uint64(n) + 256); err != nil {
		b.Fatal(err)
	}
	addrs := startBenchServer(b, n)

	for range b.N {
		m := runProbingBench(b, addrs, duration)
		base := runNetHTTPBench(b, addrs, duration)
		b.ReportMetric(m.cpuPerProbe, "cpu-us/probe")
		b.ReportMetric(m.setupCPUPerProbe, "setup-cpu-us/probe")
		b.ReportMetric(m.rssPerBackend, "rss-KiB/backend")
		b.ReportMetric(m.lagP99, "lag-p99-ms")
		b.ReportMetric(m.probesPerSecond, "probes/s")
		b.ReportMetric(m.allocsPerProbe, "allocs/probe")
		b.ReportMetric(m.bytesPerProbe, "B/probe")
		b.ReportMetric(float64(m.fanoutRounds), "fanout-rounds")
		b.ReportMetric(base.cpuPerProbe, "nethttp-cpu-us/probe")
		b.ReportMetric(base.rssPerBackend, "nethttp-rss-KiB/backend")
		b.ReportMetric(base.lagP99, "nethttp-lag-p99-ms")
		b.ReportMetric(base.probesPerSecond, "nethttp-probes/s")
		b.ReportMetric(m.cpuPerProbe/base.cpuPerProbe, "cpu-ratio")
		b.ReportMetric(m.rssPerBackend/base.rssPerBackend, "rss-ratio")
		b.ReportMetric(0, "ns/op")
		b.Logf("probegate, %d backends for %s with %d fan-out rounds to all of them: %.0f probes/s, %.1f µs CPU/probe in steady state (budget %.0f; %.1f counting connection setup), %.1f KiB RSS/backend (budget %d), lag p50 %.2f ms p99 %.2f ms max %.2f ms (budget p99 %.0f)",
			len(addrs), duration, m.fanoutRounds, m.probesPerSecond, m.cpuPerProbe, float64(budgetCPUPerProbe)/float64(time.Microsecond), m.setupCPUPerProbe,
			m.rssPerBackend, budgetRSSPerBackendK, m.lagP50, m.lagP99, m.lagMax, float64(budgetLagP99)/float64(time.Millisecond))
		b.Logf("minimal net/http prober, same backends and run: %.0f probes/s, %.1f µs CPU/probe, %.1f KiB RSS/backend, lag p50 %.2f ms p99 %.2f ms max %.2f ms; probegate/net/http: CPU %.2f×, RSS %.2f×",
			base.probesPerSecond, base.cpuPerProbe, base.rssPerBackend, base.lagP50, base.lagP99, base.lagMax, m.cpuPerProbe/base.cpuPerProbe, m.rssPerBackend/base.rssPerBackend)
		if m.lagP99 > float64(budgetLagP99)/float64(time.Millisecond) {
			b.Errorf("p99 schedule lag %.2f ms is over the %v budget", m.lagP99, budgetLagP99)
		}
		if m.cpuPerProbe > float64(budgetCPUPerProbe)/float64(time.Microsecond) {
			b.Errorf("%.1f µs CPU per probe is over the %v budget", m.cpuPerProbe, budgetCPUPerProbe)
		}
		if m.rssPerBackend > budgetRSSPerBackendK {
			b.Errorf("%.1f KiB RSS per backend is over the %d KiB budget", m.rssPerBackend, budgetRSSPerBackendK)
		}
	}
}

type probingBenchResult struct {
	cpuPerProbe, setupCPUPerProbe  float64
	rssPerBackend, probesPerSecond float64
	lagP50, lagP99, lagMax         float64
	allocsPerProbe, bytesPerProbe  float64
	fanoutRounds                   int
}

// probingBenchWarmUp is how long the benchmark probes before its steady
// window: every first probe falls within the first second.
const probingBenchWarmUp = 2 * time.Second

// lagRecorder keeps how late each probe started. Every slot is written
// before the memory baseline is taken, so that the recorder's own memory
// is not counted against the backends.
type lagRecorder struct {
	lags  []time.Duration
	count atomic.Int64
}

func newLagRecorder(backends int, d time.Duration) *lagRecorder {
	r := &lagRecorder{lags: make([]time.Duration, int(float64(backends)*(d+probingBenchWarmUp+time.Second).Seconds()))}
	for i := range r.lags {
		r.lags[i] = -1
	}
	return r
}

func (r *lagRecorder) record(lag time.Duration) {
	if i := r.count.Add(1) - 1; i < int64(len(r.lags)) {
		r.lags[i] = lag
	}
}

// quantile is the q-quantile of the recorded lags in milliseconds; it
// sorts, so it is called once recording ended.
func (r *lagRecorder) quantile(q float64) float64 {
	recorded := r.lags[:min(int(r.count.Load()), len(r.lags))]
	if len(recorded) == 0 {
		return 0
	}
	slices.Sort(recorded)
	return float64(recorded[int(q*float64(len(recorded)-1))]) / float64(time.Millisecond)
}

func perProbe(cpu time.Duration, n int64) float64 {
	return float64(cpu) / float64(time.Microsecond) / float64(n)
}

func runProbingBench(b *testing.B, addrs []string, duration time.Duration) probingBenchResult {
	// probegate's defaults (the default http_client_config included), at a
	// 1s interval.
	cfg := config.Default()
	cfg.HealthProbe.Interval = model.Duration(time.Second)
	cfg.HealthProbe.Timeout = model.Duration(500 * time.Millisecond)
	for i, addr := range addrs {
		cfg.Backends = append(cfg.Backends, config.Backend{Name: fmt.Sprintf("backend-%d", i), URL: "http://" + addr})
	}
	lags := newLagRecorder(len(addrs), duration)
	var probes, notOK atomic.Int64
	var notOKMu sync.Mutex
	notOKReasons := map[string]int{}
	fanoutEvery := probingBenchFanoutEvery
	if v := os.Getenv(benchFanoutEnv); v != "" {
		var err error
		if fanoutEvery, err = time.ParseDuration(v); err != nil || fanoutEvery < 0 {
			b.Fatalf("%s=%q: want a duration, 0 for no fan-out", benchFanoutEnv, v)
		}
	}

	runtime.GC()
	debug.FreeOSMemory()
	rssBefore := readRSSKiB(b)

	backends := pool.New(log.NewNopLogger(), nil)
	if err := backends.Apply(discovery.Static(cfg), pool.SettingsOf(cfg)); err != nil {
		b.Fatal(err)
	}
	// The observer stands in for the probe duration histogram probegate
	// feeds from it.
	prober := NewProber(backends, log.NewNopLogger(), func(r health.Result) {
		probes.Add(1)
		if r.Class != health.ClassOK {
			notOK.Add(1)
			notOKMu.Lock()
			notOKReasons[r.Reason.String()+": "+r.Err]++
			notOKMu.Unlock()
		}
	})
	prober.onLag = lags.record
	fanoutCfg := cfg.Fanout
	fanoutCfg.Enabled = true
	fan := fanout.New(backends, fanoutCfg, nil, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	setupCPU := processCPU(b)
	wg.Go(func() { prober.Run(ctx) })
	time.Sleep(probingBenchWarmUp)
	var warmMem, endMem runtime.MemStats
	runtime.ReadMemStats(&warmMem)
	warmProbes, warmCPU, warm := probes.Load(), processCPU(b), time.Now()
	warmNotOK := notOK.Load()

	// Fan-out rounds to every backend, through the backends' clients, as
	// probegate's /fanout/ serves them.
	rounds := 0
	var roundTimes []time.Duration
	for end := warm.Add(duration); time.Until(end) > 0; {
		if fanoutEvery == 0 {
			time.Sleep(time.Until(end))
			break
		}
		roundStart := time.Now()
		rec := httptest.NewRecorder()
		fan.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, fanout.Path+"/bench", nil))
		rounds++
		roundTimes = append(roundTimes, time.Since(roundStart))
		if want := fmt.Sprintf("%d/%d", len(addrs), len(addrs)); rec.Code != http.StatusOK || rec.Header().Get("X-Backends") != want {
			b.Errorf("fan-out round %d: status %d, X-Backends %q, want 200 and %s", rounds, rec.Code, rec.Header().Get("X-Backends"), want)
		}
		time.Sleep(min(fanoutEvery, time.Until(end)))
	}
	if rounds > 0 {
		b.Logf("fan-out rounds took %v", roundTimes)
	}

	endCPU, endProbes, elapsed := processCPU(b), probes.Load(), time.Since(warm)
	runtime.ReadMemStats(&endMem)
	rssAfter := readRSSKiB(b)
	logMemory(b, "probegate", len(addrs), &endMem)
	if path := os.Getenv(benchHeapProfileEnv); path != "" {
		writeHeapProfile(b, path)
	}
	cancel()
	wg.Wait()
	for _, backend := range backends.Backends() {
		backend.Client.CloseIdleConnections()
	}
	if err := backends.Apply(nil, pool.SettingsOf(cfg)); err != nil {
		b.Fatal(err)
	}

	if n := notOK.Load(); n > 0 {
		b.Errorf("%d probes were not ok (%d of them in the warm-up): the numbers would measure failures, not probing", n, warmNotOK)
		notOKMu.Lock()
		for reason, count := range notOKReasons {
			b.Logf("%d× %s", count, reason)
		}
		notOKMu.Unlock()
	}
	steadyProbes := endProbes - warmProbes
	if steadyProbes <= 0 {
		b.Fatal("no probe finished in the steady window")
	}
	return probingBenchResult{
		cpuPerProbe:      perProbe(endCPU-warmCPU, steadyProbes),
		setupCPUPerProbe: perProbe(endCPU-setupCPU, endProbes),
		rssPerBackend:    float64(rssAfter-rssBefore) / float64(len(addrs)),
		probesPerSecond:  float64(steadyProbes) / elapsed.Seconds(),
		lagP50:           lags.quantile(0.5),
		lagP99:           lags.quantile(0.99),
		lagMax:           lags.quantile(1),
		allocsPerProbe:   float64(endMem.Mallocs-warmMem.Mallocs) / float64(steadyProbes),
		bytesPerProbe:    float64(endMem.TotalAlloc-warmMem.TotalAlloc) / float64(steadyProbes),
		fanoutRounds:     rounds,
	}
}

// runNetHTTPBench probes the backends the minimal way net/http offers, for
// comparison: a goroutine and a ticker per backend on a random phase, one
// shared zero-value http.Transport (no idle connection limits, keep-alive
// on), GET with the probe timeout, the body read and closed.
func runNetHTTPBench(b *testing.B, addrs []string, duration time.Duration) probingBenchResult {
	const interval, timeout = time.Second, 500 * time.Millisecond
	lags := newLagRecorder(len(addrs), duration)
	var probes, notOK atomic.Int64

	runtime.GC()
	debug.FreeOSMemory()
	rssBefore := readRSSKiB(b)

	transport := &http.Transport{}
	client := &http.Client{Transport: transport, Timeout: timeout}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, addr := range addrs {
		url := "http://" + addr + "/healthz"
		wg.Go(func() {
			select {
			case <-time.After(rand.N(interval)):
			case <-ctx.Done():
				return
			}
			ticker := time.NewTicker(interval)
			defer ticker.Stop()
			due := time.Now()
			for {
				lags.record(time.Since(due))
				resp, err := client.Get(url)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != http.StatusOK {
					notOK.Add(1)
				}
				probes.Add(1)
				select {
				case due = <-ticker.C:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	time.Sleep(probingBenchWarmUp)
	warmProbes, warmCPU, warm := probes.Load(), processCPU(b), time.Now()
	time.Sleep(duration)
	endCPU, endProbes, elapsed := processCPU(b), probes.Load(), time.Since(warm)
	rssAfter := readRSSKiB(b)
	var endMem runtime.MemStats
	runtime.ReadMemStats(&endMem)
	logMemory(b, "net/http prober", len(addrs), &endMem)
	cancel()
	wg.Wait()
	transport.CloseIdleConnections()

	if n := notOK.Load(); n > 0 {
		b.Errorf("%d probes of the net/http prober were not ok", n)
	}
	steadyProbes := endProbes - warmProbes
	if steadyProbes <= 0 {
		b.Fatal("no probe of the net/http prober finished in the steady window")
	}
	return probingBenchResult{
		cpuPerProbe:     perProbe(endCPU-warmCPU, steadyProbes),
		rssPerBackend:   float64(rssAfter-rssBefore) / float64(len(addrs)),
		probesPerSecond: float64(steadyProbes) / elapsed.Seconds(),
		lagP50:          lags.quantile(0.5),
		lagP99:          lags.quantile(0.99),
		lagMax:          lags.quantile(1),
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
// answers every request with 200 and an empty JSON array, which a probe
// and a fan-out round alike take, until stdin closes.
func runBenchServer() int {
	n, err := strconv.Atoi(os.Getenv(benchBackendsEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench server:", err)
		return 1
	}
	if err := raiseFileLimit(3*uint64(n) + 256); err != nil {
		fmt.Fprintln(os.Stderr, "bench server:", err)
		return 1
	}
	body := []byte("[]")
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

// raiseFileLimit lifts the soft open-file limit to the hard one and fails
// when that is still below need: 5,000 backends need 5,000 connections on
// each side, more during a fan-out round, and the server a listener per
// backend too.
func raiseFileLimit(need uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("read the open-file limit: %w", err)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("raise the open-file limit to %d: %w", lim.Max, err)
	}
	if lim.Cur < need {
		return fmt.Errorf("the open-file limit is %d, below the %d this benchmark needs: raise the hard limit (ulimit -Hn)", lim.Cur, need)
	}
	return nil
}

// logMemory logs where the memory of a run is, per backend: the Go heap
// in use, goroutine stacks, heap the runtime holds but does not use, and
// the goroutines and open files behind them.
func logMemory(b *testing.B, who string, backends int, m *runtime.MemStats) {
	fds, _ := os.ReadDir("/proc/self/fd")
	per := func(bytes uint64) float64 { return float64(bytes) / 1024 / float64(backends) }
	b.Logf("%s, per backend: heap in use %.1f KiB, stacks %.1f KiB, heap idle not released %.1f KiB; %.2f goroutines and %.2f open files per backend",
		who, per(m.HeapInuse), per(m.StackInuse), per(m.HeapIdle-m.HeapReleased),
		float64(runtime.NumGoroutine())/float64(backends), float64(len(fds))/float64(backends))
}

func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
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
	client := testClient(b)
	req, err := NewHTTPRequest(srv.URL + "/healthz")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		r := HTTP(ctx, client, req, time.Second)
		cancel()
		if r.Class != health.ClassOK {
			b.Fatalf("probe: %+v", r)
		}
	}
}

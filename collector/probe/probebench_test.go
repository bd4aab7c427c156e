package probe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
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
	// phase, taken at the end of its steady window, and
	// benchCPUProfileEnv one for a CPU profile of its steady window; each
	// run's profile goes to the name with -keepalive or -oneshot before
	// the extension.
	benchHeapProfileEnv = "PROBEGATE_BENCH_HEAPPROFILE"
	benchCPUProfileEnv  = "PROBEGATE_BENCH_CPUPROFILE"
)

// The budgets of probing loopback backends at 1s (docs/design.md,
// "Budgets"), beside HAProxy's checks of the same backends in the same
// run: at 5,000 backends with keep-alive, CPU per probe within 0.7 of
// HAProxy's and at most 12 KiB per backend with probes only, 24 KiB with
// fan-out rounds in use and at most 2 connections per backend; with
// keep_alive false within 1.5 of HAProxy's CPU and 12 KiB; at every size
// on schedule; at most 10 allocations per probe.
const (
	budgetLagP99           = 100 * time.Millisecond
	budgetCPURatio         = 0.7
	budgetRSSPerBackendK   = 12
	budgetFanoutRSSK       = 24
	budgetConnsPerBackend  = 2
	budgetOneShotCPURatio  = 1.5
	budgetOneShotRSSK      = 12
	budgetAllocsPerProbe   = 10
	budgetBackendsMeasured = 5000
)

// benchRoundsEnv says how many rounds the probing benchmark runs, each
// measuring every prober once, interleaved, so that a load spike on the
// shared machine hits one round of each rather than one prober.
const benchRoundsEnv = "PROBEGATE_BENCH_ROUNDS"

// probingBenchFanoutEvery is how often the benchmark runs a fan-out round
// to every backend, through the same clients as the probes, unless
// PROBEGATE_BENCH_FANOUT_EVERY says otherwise (0 turns fan-out off, to
// see what it costs).
const probingBenchFanoutEvery = 5 * time.Second

// BenchmarkProbing5000 probes loopback backends at a 1s interval with five
// probers in turn, over the same backends, in each of
// PROBEGATE_BENCH_ROUNDS rounds (default 3), for each number of backends
// in PROBEGATE_BENCH_BACKENDS (a comma-separated list, default 5000):
//
//   - probegate, keep-alive, probes only;
//   - probegate, keep-alive, with fan-out rounds to every backend through
//     the backends' clients every 5s;
//   - probegate with health_probe.keep_alive false, a connection per
//     probe, without fan-out;
//   - HAProxy's own checks (option httpchk, inter 1s) of the same
//     backends, a connection per check;
//   - a minimal net/http prober (a goroutine and ticker per backend, one
//     shared http.Transport), for reference.
//
// It reports, as min/median/max over the rounds:
//
//   - cpu-us/probe: user+sys CPU of the prober's process per probe in
//     steady state, from the end of a warm-up (every backend probed once)
//     to the end of the run. For probegate with fan-out this excludes the
//     fan-out rounds, their CPU and the probes that ran meanwhile, which
//     all-cpu-us/probe includes.
//   - rss-KiB/backend: the growth of the prober's resident memory from
//     before its backends were set up (for HAProxy: over HAProxy checking
//     one backend) to the end of the run, per backend.
//   - conns/backend: the TCP connections the prober holds open, per
//     backend, the mean of samples taken every connSampleEvery over the
//     steady window, fan-out rounds and the pauses between them alike
//     (the count at the end, which falls at a different distance from
//     the last round in every run, is logged beside it).
//   - the ratios of the probegate runs over HAProxy, within a round;
//
// and then the budget table with each median beside its budget. The
// benchmark fails when a median at 5,000 backends is over its budget (the
// lag at every size). The backends live in child processes of at most
// benchServerShare backends each, this test binary re-executed in server
// mode, which count the requests they answer (HAProxy's checks are
// counted there). A prober whose connections to every backend would not
// fit this process's open-file limit, which cannot be raised past its
// hard value (20,000 on the development machines and CI), is measured at
// the most backends that fit: probegate with keep-alive and the net/http
// prober at 19,000 of 20,000, with fan-out rounds at 9,000. HAProxy
// checks more than haproxyShare backends from several processes. The tables
// say which count each line was measured at and why;
// PROBEGATE_BENCH_TABLE names a file they are written to. blackbox_exporter is
// measured too when it can be built from the Go module proxy (unless
// PROBEGATE_BENCH_BLACKBOX=0); otherwise the benchmark says why it is
// skipped.
func BenchmarkProbing5000(b *testing.B) {
	sizes := benchEnvInts(b, benchBackendsEnv, 5000)
	duration := benchEnvDuration(b, benchDurationEnv, 20*time.Second)
	rounds := benchEnvInt(b, benchRoundsEnv, 3)
	fanoutEvery := probingBenchFanoutEvery
	if v := os.Getenv(benchFanoutEnv); v != "" {
		var err error
		if fanoutEvery, err = time.ParseDuration(v); err != nil || fanoutEvery < 0 {
			b.Fatalf("%s=%q: want a duration, 0 for no fan-out", benchFanoutEnv, v)
		}
	}
	blackbox := ""
	if os.Getenv(benchBlackboxEnv) != "0" {
		blackbox = buildBlackbox(b)
	}
	only := func(string) bool { return true }
	if v := os.Getenv(benchOnlyEnv); v != "" {
		chosen := strings.Split(v, ",")
		for _, who := range chosen {
			if _, ok := probingBenchNames[who]; !ok {
				b.Fatalf("%s=%q: %q is none of the probers %v", benchOnlyEnv, v, who, slices.Sorted(maps.Keys(probingBenchNames)))
			}
		}
		only = func(who string) bool { return slices.Contains(chosen, who) }
	}
	limit, err := raisedFileLimit()
	if err != nil {
		b.Fatal(err)
	}
	tablePath := os.Getenv(benchTableEnv)
	for range b.N {
		var tables strings.Builder
		for _, n := range sizes {
			tables.WriteString(runProbingSize(b, n, limit, duration, rounds, fanoutEvery, blackbox, only))
			if tablePath != "" {
				if err := os.WriteFile(tablePath, []byte(tables.String()), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

// benchOnlyEnv, a comma-separated list of the probers' short names
// (probegate, fanout, oneshot, haproxy, nethttp, blackbox), runs only
// those, for a quick look at one of them beside HAProxy.
const benchOnlyEnv = "PROBEGATE_BENCH_ONLY"

// probingBenchRatios are the ratios the benchmark takes within each
// round: a number of one prober over the same number of another.
var probingBenchRatios = []struct {
	name, of, over string
	get            func(probingBenchResult) float64
}{
	{"cpu-ratio", "probegate", "haproxy", probingBenchCPU},
	{"rss-ratio", "probegate", "haproxy", probingBenchRSS},
	{"fanout-cpu-ratio", "fanout", "haproxy", probingBenchCPU},
	{"oneshot-cpu-ratio", "oneshot", "haproxy", probingBenchCPU},
	{"oneshot-rss-ratio", "oneshot", "haproxy", probingBenchRSS},
	{"nethttp-cpu-ratio", "nethttp", "haproxy", probingBenchCPU},
	{"blackbox-cpu-ratio", "blackbox", "haproxy", probingBenchCPU},
}

func probingBenchCPU(r probingBenchResult) float64 { return r.cpuPerProbe }
func probingBenchRSS(r probingBenchResult) float64 { return r.rssPerBackend }

// benchTableEnv names a file the probing benchmark writes its budget
// tables to, every size's, as it logs them.
const benchTableEnv = "PROBEGATE_BENCH_TABLE"

// probingBenchDescriptors is how many descriptors of this process each
// prober of the benchmark holds per backend it probes: a kept connection
// for probegate with keep-alive and the net/http prober, a second one
// during a fan-out round, and none between probes for probegate without
// keep-alive, whose connections live while their probe is in flight.
// HAProxy and blackbox_exporter hold theirs in their own processes.
var probingBenchDescriptors = map[string]int{"probegate": 1, "fanout": 2, "oneshot": 0, "haproxy": 0, "nethttp": 1, "blackbox": 0}

// probingBenchNames are the probers' names in the benchmark's tables.
var probingBenchNames = map[string]string{
	"probegate": "probegate keep-alive", "fanout": "probegate keep-alive with fan-out", "oneshot": "probegate keep_alive false",
	"haproxy": "HAProxy", "nethttp": "net/http prober", "blackbox": "blackbox_exporter",
}

// benchBlackboxEnv set to 0 skips blackbox_exporter.
const benchBlackboxEnv = "PROBEGATE_BENCH_BLACKBOX"

// runProbingSize runs the rounds of the probing benchmark over n
// backends, reports them, checks the budgets and returns the budget
// table. A prober whose connections to n backends would not fit the
// open-file limit of this process is measured at the most that fit
// (benchFit), and the table says so.
func runProbingSize(b *testing.B, n int, limit uint64, duration time.Duration, rounds int, fanoutEvery time.Duration, blackbox string, only func(who string) bool) string {
	srv := startBenchServer(b, n)
	defer srv.stop()
	s := probingBenchSeries{counts: map[string]benchCount{}}
	for who, perBackend := range probingBenchDescriptors {
		s.counts[who] = benchFit(n, perBackend, limit)
	}
	for _, who := range slices.Sorted(maps.Keys(s.counts)) {
		if s.counts[who].backends == 0 {
			b.Logf("%d backends skipped: %s", n, s.counts[who].why)
			return ""
		}
	}
	addrs := func(who string) []string { return srv.addrs[:s.counts[who].backends] }
	haproxy := newHAProxyBench(b, srv)
	runs := []probingBenchRun{
		{"probegate", func() probingBenchResult {
			return runProbingBench(b, addrs("probegate"), duration, probingBenchOptions{keepAlive: true, run: "probes"})
		}},
		{"fanout", func() probingBenchResult {
			return runProbingBench(b, addrs("fanout"), duration, probingBenchOptions{keepAlive: true, fanoutEvery: fanoutEvery, run: "fanout"})
		}},
		{"oneshot", func() probingBenchResult {
			return runProbingBench(b, addrs("oneshot"), duration, probingBenchOptions{keepAlive: false, run: "oneshot"})
		}},
		{"haproxy", func() probingBenchResult { return haproxy.run(b, duration) }},
		{"nethttp", func() probingBenchResult { return runNetHTTPBench(b, addrs("nethttp"), duration) }},
	}
	if blackbox != "" {
		runs = append(runs, probingBenchRun{"blackbox", func() probingBenchResult { return runBlackboxBench(b, blackbox, srv, duration) }})
	}
	for round := range rounds {
		results := map[string]probingBenchResult{}
		var line strings.Builder
		for _, r := range runs {
			if !only(r.who) {
				continue
			}
			busyBefore, serversBefore, start := machineBusy(b), srv.cpu(b), time.Now()
			res := r.run()
			elapsed := time.Since(start)
			res.machineBusy = float64(machineBusy(b)-busyBefore) / float64(elapsed) / float64(runtime.NumCPU())
			res.serverCores = float64(srv.cpu(b)-serversBefore) / float64(elapsed)
			results[r.who] = res
			s.add(r.who, res)
			fmt.Fprintf(&line, "; %s at %d: %.1f µs/probe, %.1f KiB, the machine %.0f%% busy, the bench servers using %.2f cores", r.who, s.counts[r.who].backends, res.cpuPerProbe, res.rssPerBackend, 100*res.machineBusy, res.serverCores)
		}
		for _, q := range probingBenchRatios {
			if num, ok := results[q.of]; ok {
				if den, ok := results[q.over]; ok {
					s.ratio(q.name, q.get(num)/q.get(den))
				}
			}
		}
		b.Logf("%d backends, round %d of %d, %s each%s", n, round+1, rounds, duration, line.String())
	}
	s.report(b, n)
	return s.budgets(b, n)
}

// probingBenchRun is one prober's run in a round of the probing
// benchmark.
type probingBenchRun struct {
	who string
	run func() probingBenchResult
}

// budgets logs the budget table of a size, each median beside its budget
// and its min-max and the number of backends it was measured at, fails
// the benchmark for a median over budget (at 5,000 backends every budget,
// at any other size the schedule lag) and returns the table.
func (s *probingBenchSeries) budgets(b *testing.B, n int) string {
	of := func(who string, get func(probingBenchResult) float64) []float64 {
		values := make([]float64, len(s.results[who]))
		for i, r := range s.results[who] {
			values[i] = get(r)
		}
		return values
	}
	cpu, rss := probingBenchCPU, probingBenchRSS
	lag := func(r probingBenchResult) float64 { return r.lagP99 }
	busy := func(r probingBenchResult) float64 { return 100 * r.machineBusy }
	rows := []struct {
		what   string
		values []float64
		// who measured the values: the prober, or the two of a ratio.
		who    []string
		budget float64
		every  bool // checked at every size
	}{
		{"CPU per probe, keep-alive, × HAProxy", s.ratios["cpu-ratio"], []string{"probegate", "haproxy"}, budgetCPURatio, false},
		{"RSS KiB per backend, probes only", of("probegate", rss), []string{"probegate"}, budgetRSSPerBackendK, false},
		{"RSS KiB per backend, with fan-out rounds", of("fanout", rss), []string{"fanout"}, budgetFanoutRSSK, false},
		{"keep_alive false: CPU per probe × HAProxy", s.ratios["oneshot-cpu-ratio"], []string{"oneshot", "haproxy"}, budgetOneShotCPURatio, false},
		{"keep_alive false: RSS KiB per backend", of("oneshot", rss), []string{"oneshot"}, budgetOneShotRSSK, false},
		{"open connections per backend, with fan-out", of("fanout", func(r probingBenchResult) float64 { return r.connsPerBackend }), []string{"fanout"}, budgetConnsPerBackend, false},
		{"schedule lag p99 ms, keep-alive", of("probegate", lag), []string{"probegate"}, float64(budgetLagP99 / time.Millisecond), true},
		{"schedule lag p99 ms, keep_alive false", of("oneshot", lag), []string{"oneshot"}, float64(budgetLagP99 / time.Millisecond), true},
		{"allocations per probe", of("probegate", func(r probingBenchResult) float64 { return r.allocsPerProbe }), []string{"probegate"}, budgetAllocsPerProbe, false},
		{"for reference: CPU per probe, HAProxy µs", of("haproxy", cpu), []string{"haproxy"}, 0, false},
		{"for reference: CPU per probe, probegate µs", of("probegate", cpu), []string{"probegate"}, 0, false},
		{"for reference: CPU per probe, keep_alive false µs", of("oneshot", cpu), []string{"oneshot"}, 0, false},
		{"for reference: CPU per probe, net/http prober × HAProxy", s.ratios["nethttp-cpu-ratio"], []string{"nethttp", "haproxy"}, 0, false},
		{"for reference: machine busy %, probegate keep-alive", of("probegate", busy), []string{"probegate"}, 0, false},
		{"for reference: machine busy %, keep_alive false", of("oneshot", busy), []string{"oneshot"}, 0, false},
		{"for reference: machine busy %, HAProxy", of("haproxy", busy), []string{"haproxy"}, 0, false},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "budgets at %d backends (median, min-max of %d rounds, the backends each was measured at):\n", n, len(s.results[s.order[0]]))
	for _, who := range s.order {
		if c := s.counts[who]; c.backends != n {
			fmt.Fprintf(&table, "  %s measured at %d backends, not %d: %s\n", probingBenchNames[who], c.backends, n, c.why)
		}
		if k := s.results[who][0].processes; k > 1 {
			fmt.Fprintf(&table, "  %s measured at %d backends shared by %d processes, their CPU and memory summed: one process keeps a descriptor per backend it checks, over its open-file limit\n", probingBenchNames[who], s.counts[who].backends, k)
		}
	}
	for _, row := range rows {
		if len(row.values) == 0 {
			continue
		}
		sorted := slices.Clone(row.values)
		slices.Sort(sorted)
		med := medianOf(sorted)
		verdict := ""
		if row.budget > 0 {
			verdict = fmt.Sprintf("budget %g: ok", row.budget)
			if med > row.budget {
				verdict = fmt.Sprintf("budget %g: OVER", row.budget)
			}
		}
		at := make([]string, len(row.who))
		for i, who := range row.who {
			at[i] = strconv.Itoa(s.counts[who].backends)
		}
		fmt.Fprintf(&table, "  %-56s %8.2f  (%.2f-%.2f)  at %-11s  %s\n", row.what, med, sorted[0], sorted[len(sorted)-1], strings.Join(at, "/"), verdict)
		if row.budget > 0 && med > row.budget && (row.every || n == budgetBackendsMeasured) {
			b.Errorf("%d backends: %s %.2f (median) is over its budget of %g", n, row.what, med, row.budget)
		}
	}
	b.Log(table.String())
	return table.String()
}

// probingBenchOptions are what one probegate run of the benchmark varies.
type probingBenchOptions struct {
	keepAlive   bool
	fanoutEvery time.Duration
	// run names the run in the names of its profiles.
	run string
}

// probingBenchSeries collects the rounds' results per prober and the
// ratios taken within each round.
type probingBenchSeries struct {
	// counts are the backends each prober is measured at.
	counts  map[string]benchCount
	results map[string][]probingBenchResult
	ratios  map[string][]float64
	order   []string
}

func (s *probingBenchSeries) add(who string, r probingBenchResult) {
	if s.results == nil {
		s.results, s.ratios = map[string][]probingBenchResult{}, map[string][]float64{}
	}
	if _, ok := s.results[who]; !ok {
		s.order = append(s.order, who)
	}
	s.results[who] = append(s.results[who], r)
}

func (s *probingBenchSeries) ratio(name string, v float64) {
	s.ratios[name] = append(s.ratios[name], v)
}

// report logs min/median/max of every number and reports the medians as
// benchmark metrics, named for the number of backends n.
func (s *probingBenchSeries) report(b *testing.B, n int) {
	numbers := []struct {
		unit string
		get  func(probingBenchResult) float64
	}{
		{"cpu-us/probe", func(r probingBenchResult) float64 { return r.cpuPerProbe }},
		{"all-cpu-us/probe", func(r probingBenchResult) float64 { return r.allCPUPerProbe }},
		{"rss-KiB/backend", func(r probingBenchResult) float64 { return r.rssPerBackend }},
		{"conns/backend", func(r probingBenchResult) float64 { return r.connsPerBackend }},
		{"lag-p99-ms", func(r probingBenchResult) float64 { return r.lagP99 }},
		{"probes/s", func(r probingBenchResult) float64 { return r.probesPerSecond }},
		{"allocs/probe", func(r probingBenchResult) float64 { return r.allocsPerProbe }},
		{"machine-busy-%", func(r probingBenchResult) float64 { return 100 * r.machineBusy }},
		{"server-cores", func(r probingBenchResult) float64 { return r.serverCores }},
	}
	for _, who := range s.order {
		results := s.results[who]
		var line strings.Builder
		for _, num := range numbers {
			values := make([]float64, len(results))
			for i, r := range results {
				values[i] = num.get(r)
			}
			if slices.Max(values) == 0 {
				continue // not measured for this prober
			}
			slices.Sort(values)
			fmt.Fprintf(&line, " %s %s", num.unit, minMedianMax(values))
			b.ReportMetric(medianOf(values), fmt.Sprintf("%d-%s-%s", n, who, num.unit))
		}
		b.Logf("%d backends, %-9s at %d (min/median/max of %d):%s", n, who, s.counts[who].backends, len(results), line.String())
	}
	for _, name := range slices.Sorted(maps.Keys(s.ratios)) {
		values := slices.Clone(s.ratios[name])
		slices.Sort(values)
		b.Logf("%d backends, %s: %s", n, name, minMedianMax(values))
		b.ReportMetric(medianOf(values), fmt.Sprintf("%d-%s", n, name))
	}
	b.ReportMetric(0, "ns/op")
}

func minMedianMax(sorted []float64) string {
	return fmt.Sprintf("%.2f/%.2f/%.2f", sorted[0], medianOf(sorted), sorted[len(sorted)-1])
}

// medianOf is the median of values, sorted or not.
func medianOf(values []float64) float64 {
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}

type probingBenchResult struct {
	cpuPerProbe, setupCPUPerProbe  float64
	allCPUPerProbe                 float64
	connsPerBackend                float64
	rssPerBackend, probesPerSecond float64
	lagP50, lagP99, lagMax         float64
	allocsPerProbe, bytesPerProbe  float64
	fanoutRounds                   int
	// processes is how many processes shared the backends, when more
	// than one did.
	processes int
	// machineBusy is the share of the machine's CPU time that was busy
	// during the run, whoever used it, and serverCores the cores the
	// bench servers used: where the machine was saturated, a prober that
	// fell behind says more about the machine than about itself.
	machineBusy, serverCores float64
}

// machineBusy is the CPU time every CPU of the machine has been busy so
// far, from /proc/stat: all but idle and iowait.
func machineBusy(b *testing.B) time.Duration {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[0] != "cpu" {
		b.Fatalf("/proc/stat: no cpu line in %q", line)
	}
	var busy int64
	for i, f := range fields[1:] {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Fatalf("/proc/stat: %v", err)
		}
		if i != 3 && i != 4 { // idle and iowait
			busy += v
		}
	}
	return time.Duration(busy) * time.Second / clockTicksPerSecond
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

func runProbingBench(b *testing.B, addrs []string, duration time.Duration, opts probingBenchOptions) probingBenchResult {
	// probegate's defaults (the default http_client_config included), at a
	// 1s interval.
	cfg := config.Default()
	cfg.HealthProbe.Interval = model.Duration(time.Second)
	cfg.HealthProbe.Timeout = model.Duration(500 * time.Millisecond)
	cfg.HealthProbe.KeepAlive = new(opts.keepAlive)
	for i, addr := range addrs {
		cfg.Backends = append(cfg.Backends, config.Backend{Name: fmt.Sprintf("backend-%d", i), URL: "http://" + addr})
	}
	lags := newLagRecorder(len(addrs), duration)
	var probes, notOK atomic.Int64
	var notOKMu sync.Mutex
	// Failed probes are counted by reason, with the first error of each as
	// its example: an error names its connection's addresses, and a map
	// keyed by error grew by an entry for nearly every failed probe of an
	// overloaded run, its allocations and memory counted as the probes'.
	notOKReasons := map[health.Reason]*notOKReason{}
	fanoutEvery := opts.fanoutEvery

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
			if seen := notOKReasons[r.Reason]; seen != nil {
				seen.count++
			} else {
				notOKReasons[r.Reason] = &notOKReason{count: 1, example: r.Err}
			}
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
	stopProfile := func() {}
	if path := os.Getenv(benchCPUProfileEnv); path != "" {
		stopProfile = startCPUProfile(b, profilePath(path, opts, len(addrs)))
	}
	// Only the run with fan-out rounds has a connection budget, and
	// reading /proc/self/fd allocates for every descriptor: sampled in
	// the other runs, it would add about two allocations to every probe
	// they count.
	var sockets *socketSampler
	if fanoutEvery > 0 {
		sockets = sampleSockets(b, connSampleEvery)
	}

	// Fan-out rounds to every backend, through the backends' clients, as
	// probegate's /fanout/ serves them.
	// The CPU of the rounds, and the probes that ran meanwhile, are
	// counted apart, so that CPU per probe can also be given without the
	// fan-out's own work.
	rounds := 0
	var roundTimes []time.Duration
	var roundCPU time.Duration
	var roundProbes int64
	for end := warm.Add(duration); time.Until(end) > 0; {
		if fanoutEvery == 0 {
			time.Sleep(time.Until(end))
			break
		}
		roundStart, cpuBefore, probesBefore := time.Now(), processCPU(b), probes.Load()
		rec := httptest.NewRecorder()
		fan.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, fanout.Path+"/bench", nil))
		rounds++
		roundTimes = append(roundTimes, time.Since(roundStart))
		roundCPU += processCPU(b) - cpuBefore
		roundProbes += probes.Load() - probesBefore
		if want := fmt.Sprintf("%d/%d", len(addrs), len(addrs)); rec.Code != http.StatusOK || rec.Header().Get("X-Backends") != want {
			b.Errorf("fan-out round %d: status %d, X-Backends %q, want 200 and %s", rounds, rec.Code, rec.Header().Get("X-Backends"), want)
		}
		time.Sleep(min(fanoutEvery, time.Until(end)))
	}
	if rounds > 0 {
		b.Logf("fan-out rounds took %v", roundTimes)
	}

	endCPU, endProbes, elapsed := processCPU(b), probes.Load(), time.Since(warm)
	stopProfile()
	runtime.ReadMemStats(&endMem)
	var meanConns float64
	if sockets != nil {
		meanConns = sockets.stop()
	}
	rssAfter := readRSSKiB(b)
	conns := openSockets(b)
	if sockets == nil {
		meanConns = float64(conns)
	}
	if sockets != nil {
		b.Logf("probegate: %.2f connections per backend on average over the steady window, %.2f at its end", meanConns/float64(len(addrs)), float64(conns)/float64(len(addrs)))
	} else {
		b.Logf("probegate: %.2f connections per backend at the end of the steady window", float64(conns)/float64(len(addrs)))
	}
	logMemory(b, "probegate", len(addrs), &endMem)
	if path := os.Getenv(benchHeapProfileEnv); path != "" {
		writeHeapProfile(b, profilePath(path, opts, len(addrs)))
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
		for reason, seen := range notOKReasons {
			b.Logf("%d× %s, such as: %s", seen.count, reason, seen.example)
		}
		notOKMu.Unlock()
	}
	steadyProbes := endProbes - warmProbes
	if steadyProbes <= 0 {
		b.Fatal("no probe finished in the steady window")
	}
	return probingBenchResult{
		cpuPerProbe:      perProbe(endCPU-warmCPU-roundCPU, steadyProbes-roundProbes),
		allCPUPerProbe:   perProbe(endCPU-warmCPU, steadyProbes),
		setupCPUPerProbe: perProbe(endCPU-setupCPU, endProbes),
		rssPerBackend:    float64(rssAfter-rssBefore) / float64(len(addrs)),
		connsPerBackend:  meanConns / float64(len(addrs)),
		probesPerSecond:  float64(steadyProbes) / elapsed.Seconds(),
		lagP50:           lags.quantile(0.5),
		lagP99:           lags.quantile(0.99),
		lagMax:           lags.quantile(1),
		allocsPerProbe:   float64(endMem.Mallocs-warmMem.Mallocs) / float64(steadyProbes),
		bytesPerProbe:    float64(endMem.TotalAlloc-warmMem.TotalAlloc) / float64(steadyProbes),
		fanoutRounds:     rounds,
	}
}

// notOKReason is how many probes of a run failed for one reason, and the
// error of the first of them.
type notOKReason struct {
	count   int
	example string
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
	conns := openSockets(b)
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
		connsPerBackend: float64(conns) / float64(len(addrs)),
		probesPerSecond: float64(steadyProbes) / elapsed.Seconds(),
		lagP50:          lags.quantile(0.5),
		lagP99:          lags.quantile(0.99),
		lagMax:          lags.quantile(1),
	}
}

// benchServerShare is the most backends one bench server process
// serves. A backend costs its server a listener and a connection, and
// the open-file limit, which cannot be raised past its hard value, holds
// for each process: 20,000 backends are served by four processes.
const benchServerShare = 5000

// benchServer is the running backend servers of a benchmark: child
// processes serving benchServerShare backends or fewer each, counted as
// one.
type benchServer struct {
	addrs    []string
	children []*benchServerChild
}

// benchServerChild is one bench server process.
type benchServerChild struct {
	cmd      *exec.Cmd
	stopOnce sync.Once
	mu       sync.Mutex
	stdin    io.WriteCloser
	lines    *bufio.Scanner
}

// cpu is the CPU time the servers used so far.
func (s *benchServer) cpu(b *testing.B) time.Duration {
	var sum time.Duration
	for _, c := range s.children {
		sum += procCPU(b, strconv.Itoa(c.cmd.Process.Pid))
	}
	return sum
}

// stop ends every server and waits for them to exit.
func (s *benchServer) stop() {
	for _, c := range s.children {
		c.stop()
	}
}

func (c *benchServerChild) stop() {
	c.stopOnce.Do(func() {
		c.stdin.Close()
		c.cmd.Wait()
	})
}

// requests asks the servers how many requests they have answered so far,
// whoever sent them: the one count of probes every prober is measured by.
func (s *benchServer) requests(b *testing.B) int64 {
	var total int64
	for _, c := range s.children {
		total += c.requests(b)
	}
	return total
}

func (c *benchServerChild) requests(b *testing.B) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := io.WriteString(c.stdin, "count\n"); err != nil {
		b.Fatalf("ask the bench server for its count: %v", err)
	}
	if !c.lines.Scan() {
		b.Fatalf("the bench server ended: %v", c.lines.Err())
	}
	n, err := strconv.ParseInt(c.lines.Text(), 10, 64)
	if err != nil {
		b.Fatalf("the bench server's count %q: %v", c.lines.Text(), err)
	}
	return n
}

// startBenchServer re-executes the test binary as the backend servers of
// n loopback listeners, benchServerShare at most per process, and returns
// them with the listeners' addresses. A server exits when its stdin
// closes, that is when this process ends or the benchmark's cleanup
// closes it.
func startBenchServer(b *testing.B, n int) *benchServer {
	s := &benchServer{addrs: make([]string, 0, n)}
	b.Cleanup(s.stop)
	for started := 0; started < n; started += benchServerShare {
		c := startBenchServerChild(b, min(benchServerShare, n-started))
		s.children = append(s.children, c)
		s.addrs = c.readAddrs(b, s.addrs)
	}
	return s
}

func startBenchServerChild(b *testing.B, n int) *benchServerChild {
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
	return &benchServerChild{stdin: stdin, lines: bufio.NewScanner(stdout), cmd: cmd}
}

// readAddrs appends the addresses the server prints to addrs, until it
// says it is ready.
func (c *benchServerChild) readAddrs(b *testing.B, addrs []string) []string {
	for c.lines.Scan() {
		if c.lines.Text() == "ready" {
			return addrs
		}
		addrs = append(addrs, c.lines.Text())
	}
	b.Fatalf("the bench server ended before it was ready: %v", c.lines.Err())
	return nil
}

// runBenchServer is the bench server's main: it listens on as many
// loopback ports as asked, prints each address and then "ready", and
// answers every request with 200 and an empty JSON array, which a probe
// and a fan-out round alike take, until stdin closes. Each line "count"
// on stdin is answered with the number of requests answered so far.
func runBenchServer() int {
	n, err := strconv.Atoi(os.Getenv(benchBackendsEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench server:", err)
		return 1
	}
	if err := raiseFileLimit(2*uint64(n) + 256); err != nil {
		fmt.Fprintln(os.Stderr, "bench server:", err)
		return 1
	}
	body := []byte("[]")
	var requests atomic.Int64
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			requests.Add(1)
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
	for commands := bufio.NewScanner(os.Stdin); commands.Scan(); {
		if commands.Text() == "count" {
			fmt.Fprintln(out, requests.Load())
			out.Flush()
		}
	}
	return 0
}

// raiseFileLimit lifts the soft open-file limit to the hard one and fails
// when that is still below need: 5,000 backends need 5,000 connections on
// each side, more during a fan-out round, and the server a listener per
// backend too.
func raiseFileLimit(need uint64) error {
	limit, err := raisedFileLimit()
	if err != nil {
		return err
	}
	if limit < need {
		return fmt.Errorf("the open-file limit is %d, below the %d this benchmark needs: raise the hard limit (ulimit -Hn)", limit, need)
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

// profilePath is where a profile of the run with opts over n backends
// goes: path with the size and the run before its extension. A later
// round's profile replaces an earlier one's.
func profilePath(path string, opts probingBenchOptions, n int) string {
	ext := filepath.Ext(path)
	return fmt.Sprintf("%s-%d-%s%s", strings.TrimSuffix(path, ext), n, opts.run, ext)
}

// startCPUProfile profiles the CPU into path until the returned function
// is called.
func startCPUProfile(b *testing.B, path string) func() {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
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

// openSockets counts the sockets this process holds open: the prober's
// connections, since the backends live in another process.
// connSampleEvery is how often the probing benchmark counts probegate's
// open connections: twice per fan-out round period, so that samples fall
// both during rounds and between them. A count reads every descriptor's
// link, a few milliseconds at 5,000 backends, which the CPU per probe
// includes (well under 1 µs per probe at this rate).
const connSampleEvery = 2500 * time.Millisecond

// socketSampler counts this process's open sockets every so often until
// stopped.
type socketSampler struct {
	b     *testing.B
	stopc chan struct{}
	done  chan struct{}
	sum   int
	n     int
	err   error
}

func sampleSockets(b *testing.B, every time.Duration) *socketSampler {
	s := &socketSampler{b: b, stopc: make(chan struct{}), done: make(chan struct{})}
	count := func() {
		n, err := countSockets()
		s.sum, s.n, s.err = s.sum+n, s.n+1, errors.Join(s.err, err)
	}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				count()
			case <-s.stopc:
				// One more at the end, so that a short run has a sample.
				count()
				return
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the mean count of open sockets.
func (s *socketSampler) stop() float64 {
	close(s.stopc)
	<-s.done
	if s.err != nil {
		s.b.Fatalf("count open sockets: %v", s.err)
	}
	return float64(s.sum) / float64(s.n)
}

func openSockets(b *testing.B) int {
	n, err := countSockets()
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// countSockets counts this process's open sockets.
func countSockets() (int, error) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	sockets := 0
	for _, fd := range fds {
		if target, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(target, "socket:") {
			sockets++
		}
	}
	return sockets, nil
}

// readRSSKiB reads this process's resident set size from /proc.
func readRSSKiB(b *testing.B) int64 {
	return readProcRSSKiB(b, "self")
}

// readProcRSSKiB reads the resident set size of process pid ("self" for
// this one) from /proc.
func readProcRSSKiB(b *testing.B, pid string) int64 {
	status, err := os.ReadFile("/proc/" + pid + "/status")
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
	b.Fatalf("no VmRSS in /proc/%s/status", pid)
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

// benchEnvInts is a comma-separated list of positive integers from the
// environment variable name, or def alone.
func benchEnvInts(b *testing.B, name string, def int) []int {
	v := os.Getenv(name)
	if v == "" {
		return []int{def}
	}
	var out []int
	for field := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: want positive integers separated by commas", name, v)
		}
		out = append(out, n)
	}
	return out
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
// backend, server included, for its allocations, on each path, as the
// Prober runs it (with its timeout's context).
func BenchmarkProbeRequest(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	for _, path := range probePaths() {
		b.Run(path.name, func(b *testing.B) {
			target := httpTarget(b, newClient(b), srv.URL+"/healthz", time.Second, path)
			b.ReportAllocs()
			for b.Loop() {
				if r := target.run(context.Background(), time.Now); r.Class != health.ClassOK {
					b.Fatalf("probe: %+v", r)
				}
			}
		})
	}
}

package probe

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/discovery/file"

	"github.com/probegate/probegate/collector/discovery"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// The churn benchmark's knobs: PROBEGATE_BENCH_CHURN_DURATION (default
// 10m) and PROBEGATE_BENCH_CHURN_BACKENDS (default 1000).
const (
	churnDurationEnv = "PROBEGATE_BENCH_CHURN_DURATION"
	churnBackendsEnv = "PROBEGATE_BENCH_CHURN_BACKENDS"
	// churnEvery and churnShare: 10% of the backends replaced every 5 s.
	churnEvery = 5 * time.Second
	churnShare = 10
	// budgetChurnRSSGrowth is how much RSS may grow from the end of the
	// first fifth of the run, once the pool and its connections are
	// built, to the end: "flat".
	budgetChurnRSSGrowth = 0.10
)

// BenchmarkDiscoveryChurn runs 1,000 backends discovered through a real
// file_sd file, the Prometheus discovery manager with its default 5 s
// batching and probegate's pool and prober, probed every second, and
// replaces 10% of them (new address, new name) every 5 s. It logs RSS and
// the probe schedule lag p99 eight times over the run and fails when the lag p99 of the
// run is over 100 ms or RSS grows by more than 10% after the first fifth
// of the run. The backends live in a child process.
func BenchmarkDiscoveryChurn(b *testing.B) {
	n := benchEnvInt(b, churnBackendsEnv, 1000)
	duration := benchEnvDuration(b, churnDurationEnv, 10*time.Minute)
	replace := n * churnShare / 100
	if err := raiseFileLimit(4*uint64(n) + 256); err != nil {
		b.Fatal(err)
	}
	// Spare addresses for the replacements: a replaced backend's address
	// rests a round before it is used again, under a new name.
	addrs := startBenchServer(b, n+2*replace).addrs
	for range b.N {
		runChurnBench(b, addrs, n, replace, duration)
	}
}

func runChurnBench(b *testing.B, addrs []string, n, replace int, duration time.Duration) {
	dir := b.TempDir()
	list := filepath.Join(dir, "backends.json")
	// live[i] is the address index of slot i; generation names it anew.
	live := make([]int, n)
	for i := range live {
		live[i] = i
	}
	spare := make([]int, 0, 2*replace)
	for i := n; i < len(addrs); i++ {
		spare = append(spare, i)
	}
	names := make([]string, n)
	generation := 0
	write := func() {
		type group struct {
			Targets []string          `json:"targets"`
			Labels  map[string]string `json:"labels"`
		}
		groups := make([]group, n)
		for i, a := range live {
			if names[i] == "" {
				names[i] = "churn-" + itoa(generation) + "-" + itoa(i)
			}
			groups[i] = group{Targets: []string{addrs[a]}, Labels: map[string]string{"backend": names[i]}}
		}
		data, err := json.Marshal(groups)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(list+".tmp", data, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(list+".tmp", list); err != nil {
			b.Fatal(err)
		}
	}
	write()

	cfg := config.Default()
	cfg.HealthProbe.Interval = model.Duration(time.Second)
	cfg.HealthProbe.Timeout = model.Duration(500 * time.Millisecond)
	cfg.FileSDConfigs = []*file.SDConfig{{Files: []string{list}, RefreshInterval: file.DefaultSDConfig.RefreshInterval}}

	lags := newLagRecorder(n, duration)
	var probes, notOK atomic.Int64
	backends := pool.New(log.NewNopLogger(), nil)
	prober := NewProber(backends, log.NewNopLogger(), func(r health.Result) {
		probes.Add(1)
		if r.Class != health.ClassOK {
			notOK.Add(1)
		}
	})
	prober.onLag = lags.record
	ctx, cancel := context.WithCancel(context.Background())
	d, err := discovery.New(ctx, log.NewNopLogger(), slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	if err := d.ApplyConfig(cfg); err != nil {
		b.Fatal(err)
	}
	var applies atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		d.Run(func() {
			if err := backends.Apply(d.Targets(cfg), pool.SettingsOf(cfg)); err != nil {
				b.Error(err)
			}
			prober.Sync()
			applies.Add(1)
		})
	})
	wg.Go(func() { prober.Run(ctx) })
	deadline := time.Now().Add(30 * time.Second)
	for len(backends.Backends()) != n {
		if time.Now().After(deadline) {
			b.Fatalf("%d backends after 30 s, want %d", len(backends.Backends()), n)
		}
		time.Sleep(100 * time.Millisecond)
	}

	start := time.Now()
	type sample struct {
		at  time.Duration
		rss int64
	}
	var samples []sample
	// At most 8 progress lines: go test cuts a benchmark's log after 10.
	logEvery := max(30*time.Second, duration/8)
	lastLog, lastCount := start, lags.count.Load()
	churn := time.NewTicker(churnEvery)
	for time.Since(start) < duration {
		<-churn.C
		// Replace the oldest share: their addresses go to the back of
		// the spare list, new names for spare addresses take the slots.
		first := (generation * replace) % n
		generation++
		for k := range replace {
			i := (first + k) % n
			spare = append(spare, live[i])
			live[i], spare = spare[0], spare[1:]
			names[i] = ""
		}
		write()
		samples = append(samples, sample{time.Since(start), readRSSKiB(b)})
		if time.Since(lastLog) >= logEvery {
			count := lags.count.Load()
			window := slices.Clone(lags.lags[lastCount:min(count, int64(len(lags.lags)))])
			slices.Sort(window)
			var p99 time.Duration
			if len(window) > 0 {
				p99 = window[int(0.99*float64(len(window)-1))]
			}
			b.Logf("t=%3.0fs RSS %6.1f MiB, %d backends, %d pool rebuilds, lag p99 %.2f ms over the last %.0fs",
				time.Since(start).Seconds(), float64(samples[len(samples)-1].rss)/1024, len(backends.Backends()), applies.Load(),
				float64(p99)/float64(time.Millisecond), time.Since(lastLog).Seconds())
			lastLog, lastCount = time.Now(), count
		}
	}
	churn.Stop()
	cancel()
	wg.Wait()
	for _, backend := range backends.Backends() {
		backend.Client.CloseIdleConnections()
	}
	if err := backends.Apply(nil, pool.SettingsOf(cfg)); err != nil {
		b.Fatal(err)
	}

	settled := samples[len(samples)/5].rss
	end := samples[len(samples)-1].rss
	peak := slices.MaxFunc(samples, func(a, b sample) int { return int(a.rss - b.rss) }).rss
	growth := float64(end-settled) / float64(settled)
	lagP99 := lags.quantile(0.99)
	b.ReportMetric(lagP99, "lag-p99-ms")
	b.ReportMetric(float64(settled)/1024, "rss-settled-MiB")
	b.ReportMetric(float64(end)/1024, "rss-end-MiB")
	b.ReportMetric(float64(peak)/1024, "rss-peak-MiB")
	b.ReportMetric(growth*100, "rss-growth-%")
	b.ReportMetric(float64(generation*replace), "replaced")
	b.ReportMetric(0, "ns/op")
	b.Logf("%d backends, %d replaced in %d rounds over %s, %d pool rebuilds, %d probes (%d not ok): lag p99 %.2f ms (budget 100), max %.2f ms; RSS %.1f MiB after the first fifth, %.1f at the end (%+.1f%%, budget +%.0f%%), peak %.1f",
		n, generation*replace, generation, duration, applies.Load(), probes.Load(), notOK.Load(), lagP99, lags.quantile(1),
		float64(settled)/1024, float64(end)/1024, growth*100, budgetChurnRSSGrowth*100, float64(peak)/1024)
	if lagP99 > float64(budgetLagP99)/float64(time.Millisecond) {
		b.Errorf("p99 schedule lag %.2f ms is over the %v budget", lagP99, budgetLagP99)
	}
	if growth > budgetChurnRSSGrowth {
		b.Errorf("RSS grew %.1f%% after the first fifth of the run, over the %.0f%% budget", growth*100, budgetChurnRSSGrowth*100)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

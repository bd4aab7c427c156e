package collector

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/config"
)

// fanoutBenchBody is what every bench backend answers: a small JSON array,
// the shape of a typical query result page.
const fanoutBenchBody = `[{"id":1,"name":"alpha","value":0.5},{"id":2,"name":"beta","value":1.5}]`

// fanoutBenchHAProxy starts one HAProxy process serving n loopback
// backends that answer fanoutBenchBody to any request, and returns their
// URLs. HAProxy keeps the backends' cost out of this process, so the
// allocations and CPU measured here are probegate's alone.
func fanoutBenchHAProxy(b *testing.B, n int) []string {
	b.Helper()
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		b.Fatal("haproxy is not installed: run `make deps` (benchmarks never skip a missing tool)")
	}
	cfg := "global\n  maxconn 4096\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n"
	urls := make([]string, n)
	for i := range n {
		// A port the kernel just handed out and took back is free for
		// HAProxy to bind a moment later.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		urls[i] = "http://" + addr
		cfg += fmt.Sprintf("frontend backend%d\n  bind %s\n  http-request return status 200 content-type application/json string '%s'\n", i, addr, fanoutBenchBody)
	}
	path := filepath.Join(b.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(haproxy, "-db", "-f", path)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start haproxy: %v", err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for _, u := range urls {
		for {
			conn, err := net.DialTimeout("tcp", u[len("http://"):], time.Second)
			if err == nil {
				conn.Close()
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("haproxy does not listen on %s: %v", u, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return urls
}

// fanoutBenchFanout is a Fanout over the given backend URLs with the
// default settings of SPEC section 7 and passive health on, so that the
// recording of every outcome is part of the measured cost.
func fanoutBenchFanout(b *testing.B, urls []string) *Fanout {
	b.Helper()
	cfg := testConfig(urlBackends(urls...)...)
	pool, err := NewPool(cfg, log.NewNopLogger())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		for _, backend := range pool.Backends() {
			backend.Client.CloseIdleConnections()
		}
	})
	fanout := config.Fanout{Timeout: model.Duration(30 * time.Second), Merge: "json_array", MaxRequestBytes: 1 << 20, MaxResponseBytes: 64 << 20}
	passive := config.PassiveHealth{Enabled: true, Window: model.Duration(30 * time.Second), MaxFailures: 5, MinRequests: 10, MaxEjectedPercent: 50}
	return NewFanout(pool, fanout, passive, NewMetrics(prometheus.NewRegistry()), log.NewNopLogger(), time.Now)
}

// fanoutBenchPercentile is the p-quantile of durations, in microseconds.
func fanoutBenchPercentile(d []time.Duration, p float64) float64 {
	slices.Sort(d)
	return float64(d[int(float64(len(d)-1)*p)].Nanoseconds()) / 1e3
}

// BenchmarkFanoutAddedLatency measures what a fan-out to 3 loopback
// backends adds over one direct request to one of them (budget: 300 µs at
// p50). Each iteration sends one direct request and one fan-out request
// through probegate's real HTTP listener, interleaved, so that both see the
// same machine; added-p50-us is the difference of their medians.
func BenchmarkFanoutAddedLatency(b *testing.B) {
	urls := fanoutBenchHAProxy(b, 3)
	front := httptest.NewServer(fanoutBenchFanout(b, urls))
	b.Cleanup(front.Close)
	transport := &http.Transport{MaxIdleConnsPerHost: 4}
	b.Cleanup(transport.CloseIdleConnections)
	client := &http.Client{Transport: transport}
	get := func(url, wantBackends string) time.Duration {
		start := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		elapsed := time.Since(start)
		if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("X-Backends") != wantBackends {
			b.Fatalf("GET %s: status %d, X-Backends %q, %v", url, resp.StatusCode, resp.Header.Get("X-Backends"), err)
		}
		return elapsed
	}
	direct, fanned := urls[0]+"/query?q=1", front.URL+"/fanout/query?q=1"
	for range 200 {
		get(direct, "")
		get(fanned, "3/3")
	}
	directs := make([]time.Duration, 0, 1<<14)
	fanouts := make([]time.Duration, 0, 1<<14)
	b.ResetTimer()
	for b.Loop() {
		directs = append(directs, get(direct, ""))
		fanouts = append(fanouts, get(fanned, "3/3"))
	}
	b.StopTimer()
	directP50, fanoutP50 := fanoutBenchPercentile(directs, 0.5), fanoutBenchPercentile(fanouts, 0.5)
	b.ReportMetric(directP50, "direct-p50-us")
	b.ReportMetric(fanoutP50, "fanout-p50-us")
	b.ReportMetric(fanoutP50-directP50, "added-p50-us")
	b.Logf("%d rounds: direct p50 %.0f µs p99 %.0f µs; fan-out to 3 p50 %.0f µs p99 %.0f µs; added p50 %.0f µs (budget 300)",
		len(directs), directP50, fanoutBenchPercentile(directs, 0.99), fanoutP50, fanoutBenchPercentile(fanouts, 0.99), fanoutP50-directP50)
}

// fanoutBenchResponse is a ResponseWriter that keeps the status and throws
// the body away.
type fanoutBenchResponse struct {
	header http.Header
	status int
}

func (r *fanoutBenchResponse) Header() http.Header         { return r.header }
func (r *fanoutBenchResponse) Write(p []byte) (int, error) { return len(p), nil }
func (r *fanoutBenchResponse) WriteHeader(status int)      { r.status = status }

// BenchmarkFanoutHandler measures one fan-out round to 3 loopback backends
// inside probegate: the handler, the three backend requests over
// keep-alive connections, the merge and the passive-health records. Its
// allocs/op are the allocations per fan-out request (the backends are
// HAProxy, another process).
func BenchmarkFanoutHandler(b *testing.B) {
	f := fanoutBenchFanout(b, fanoutBenchHAProxy(b, 3))
	req := httptest.NewRequest(http.MethodGet, "/fanout/query?q=1", nil)
	req.RemoteAddr = "127.0.0.1:40000"
	w := &fanoutBenchResponse{header: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.header)
		f.ServeHTTP(w, req)
		if w.status != http.StatusOK || w.header.Get("X-Backends") != "3/3" {
			b.Fatalf("status %d, X-Backends %q", w.status, w.header.Get("X-Backends"))
		}
	}
}

// passiveBenchRate is the outcome rate the passive-health designs are
// compared at, and passiveBenchWindow the default window: at this rate a
// window holds 300,000 outcomes.
const (
	passiveBenchRate   = 10_000
	passiveBenchWindow = 30 * time.Second
)

// timerPerFailureCounter is the design passive health is measured against,
// as Caddy's reverse proxy counts passive failures: each failure increments
// a counter and starts a goroutine that waits on a timer as long as the
// window and then decrements it. It is in the bench file only.
type timerPerFailureCounter struct {
	ctx         context.Context
	window      time.Duration
	maxFailures int64
	failures    atomic.Int64
}

// newTimerPerFailureCounter returns a counter with the given window whose
// goroutines are all stopped, and waited for, when the benchmark ends.
func newTimerPerFailureCounter(b *testing.B, window time.Duration) *timerPerFailureCounter {
	goroutines := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(func() {
		cancel()
		passiveBenchWaitGoroutines(b, goroutines)
	})
	return &timerPerFailureCounter{ctx: ctx, window: window, maxFailures: 5}
}

// record counts one outcome and reports whether the backend should be
// ejected, like recordTraffic.
func (c *timerPerFailureCounter) record(failed bool) bool {
	if failed {
		c.failures.Add(1)
		go func() {
			timer := time.NewTimer(c.window)
			select {
			case <-c.ctx.Done():
				timer.Stop()
			case <-timer.C:
			}
			c.failures.Add(-1)
		}()
	}
	return c.failures.Load() >= c.maxFailures
}

// passiveBenchLiveBytes is the memory in use after a collection: heap and
// goroutine stacks.
func passiveBenchLiveBytes() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc + m.StackInuse)
}

// passiveBenchWaitGoroutines waits, bounded, until no more than n
// goroutines run, so that the baseline's goroutines are gone before the
// next benchmark (and goleak) looks.
func passiveBenchWaitGoroutines(b *testing.B, n int) {
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			b.Fatalf("%d goroutines still run; want %d", runtime.NumGoroutine(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkPassiveRecord compares recording one failed outcome in the ring
// window (budget: 50 ns, 0 allocs, constant memory) with the
// timer-per-failure design, at 10,000 outcomes per second: the ring is
// given a clock that advances 100 µs per outcome, and the baseline's
// timers last a 30s window, so with -benchtime 300000x (one window of
// outcomes, as `make bench-fanout` runs it) the baseline ends holding the
// 300,000 timers and goroutines it holds in the steady state at that rate.
// retained-B is the memory each design holds at the end beyond what it
// held at the start, per backend; window-B is the ring's fixed size.
func BenchmarkPassiveRecord(b *testing.B) {
	b.Run("ring", func(b *testing.B) {
		backend := &Backend{}
		before := passiveBenchLiveBytes()
		p := config.PassiveHealth{Enabled: true, Window: model.Duration(passiveBenchWindow), MaxFailures: 5, MinRequests: 10, MaxEjectedPercent: 50}
		o := trafficOutcome{Erred: true, Reason: FanoutHTTP5xx, Failed: true}
		now := time.Now()
		step := time.Second / passiveBenchRate
		ejectDue := false
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			now = now.Add(step)
			ejectDue = backend.recordTraffic(o, now, &p)
		}
		b.StopTimer()
		if !ejectDue {
			b.Fatal("a window full of failures does not call for ejection")
		}
		b.ReportMetric(float64(passiveBenchLiveBytes()-before), "retained-B")
		b.ReportMetric(float64(unsafe.Sizeof(passiveWindow{})), "window-B")
		runtime.KeepAlive(backend)
	})
	b.Run("timer_per_failure", func(b *testing.B) {
		goroutines := runtime.NumGoroutine()
		c := newTimerPerFailureCounter(b, passiveBenchWindow)
		before := passiveBenchLiveBytes()
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			c.record(true)
		}
		b.StopTimer()
		b.ReportMetric(float64(passiveBenchLiveBytes()-before), "retained-B")
		b.ReportMetric(float64(runtime.NumGoroutine()-goroutines), "goroutines")
	})
}

// BenchmarkPassiveRecordParallel records from every CPU into one backend's
// window at once: the cost of the backend mutex under contention.
func BenchmarkPassiveRecordParallel(b *testing.B) {
	backend := &Backend{}
	p := config.PassiveHealth{Enabled: true, Window: model.Duration(passiveBenchWindow), MaxFailures: 5, MinRequests: 10, MaxEjectedPercent: 50}
	start := time.Now()
	var ticks atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			now := start.Add(time.Duration(ticks.Add(1)) * (time.Second / passiveBenchRate))
			backend.recordTraffic(trafficOutcome{Failed: true}, now, &p)
		}
	})
}

// passiveBenchCPU is the user and system CPU time of this process so far.
func passiveBenchCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPassivePaced10kPerSecond feeds b.N failed outcomes at a real
// 10,000 per second (`make bench-fanout` runs 30,000: 3 s) into each
// design, with a 1s window so that the baseline's timers fire during the
// run, and reports the process CPU per outcome (pacing_only is the cost of
// the pacing loop itself, to subtract) and the goroutines alive at the end.
func BenchmarkPassivePaced10kPerSecond(b *testing.B) {
	const window = time.Second
	paced := func(b *testing.B, record func(now time.Time)) {
		// Waking every 5 ms (50 outcomes a wake) keeps the pacing's own
		// cost small next to what is measured.
		ticker := time.NewTicker(5 * time.Millisecond)
		defer ticker.Stop()
		cpu := passiveBenchCPU(b)
		start := time.Now()
		done := 0
		for done < b.N {
			now := <-ticker.C
			due := min(int(now.Sub(start).Seconds()*passiveBenchRate), b.N)
			for ; done < due; done++ {
				record(time.Now())
			}
		}
		b.ReportMetric(float64((passiveBenchCPU(b)-cpu).Nanoseconds())/float64(b.N), "cpu-ns/outcome")
		b.ReportMetric(0, "ns/op")
	}
	b.Run("pacing_only", func(b *testing.B) {
		paced(b, func(time.Time) {})
	})
	b.Run("ring", func(b *testing.B) {
		backend := &Backend{}
		p := config.PassiveHealth{Enabled: true, Window: model.Duration(window), MaxFailures: 5, MinRequests: 10, MaxEjectedPercent: 50}
		o := trafficOutcome{Erred: true, Reason: FanoutHTTP5xx, Failed: true}
		paced(b, func(now time.Time) { backend.recordTraffic(o, now, &p) })
		b.ReportMetric(0, "goroutines")
	})
	b.Run("timer_per_failure", func(b *testing.B) {
		goroutines := runtime.NumGoroutine()
		c := newTimerPerFailureCounter(b, window)
		paced(b, func(time.Time) { c.record(true) })
		b.ReportMetric(float64(runtime.NumGoroutine()-goroutines), "goroutines")
	})
}

package pool

import (
	"context"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/passive"
	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"
)

// These benchmarks measure recording an outcome in passive health's window
// against the timer-per-failure design; `make bench-fanout` runs them.

// benchRate is the outcome rate the passive-health designs are
// compared at, and benchWindow the default window: at this rate a
// window holds 300,000 outcomes.
const (
	benchRate   = 10_000
	benchWindow = 30 * time.Second
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
		waitGoroutines(b, goroutines)
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

// liveBytes is the memory in use after a collection: heap and
// goroutine stacks.
func liveBytes() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc + m.StackInuse)
}

// waitGoroutines waits, bounded, until no more than n
// goroutines run, so that the baseline's goroutines are gone before the
// next benchmark (and goleak) looks.
func waitGoroutines(b *testing.B, n int) {
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
		before := liveBytes()
		p := config.PassiveHealth{Enabled: true, Window: model.Duration(benchWindow), MaxFailures: 5, MinRequests: 10, MaxEjectedPercent: 50}
		o := traffic.Outcome{Erred: true, Reason: traffic.HTTP5xx, Failed: true}
		now := time.Now()
		step := time.Second / benchRate
		ejectDue := false
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			now = now.Add(step)
			ejectDue = backend.recordTraffic(o, now, p)
		}
		b.StopTimer()
		if !ejectDue {
			b.Fatal("a window full of failures does not call for ejection")
		}
		b.ReportMetric(float64(liveBytes()-before), "retained-B")
		b.ReportMetric(float64(unsafe.Sizeof(passive.Window{})), "window-B")
		runtime.KeepAlive(backend)
	})
	b.Run("timer_per_failure", func(b *testing.B) {
		goroutines := runtime.NumGoroutine()
		c := newTimerPerFailureCounter(b, benchWindow)
		before := liveBytes()
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			c.record(true)
		}
		b.StopTimer()
		b.ReportMetric(float64(liveBytes()-before), "retained-B")
		b.ReportMetric(float64(runtime.NumGoroutine()-goroutines), "goroutines")
	})
}

// BenchmarkPassiveRecordParallel records from every CPU into one backend's
// window at once: the cost of the backend mutex under contention.
func BenchmarkPassiveRecordParallel(b *testing.B) {
	backend := &Backend{}
	p := config.PassiveHealth{Enabled: true, Window: model.Duration(benchWindow), MaxFailures: 5, MinRequests: 10, MaxEjectedPercent: 50}
	start := time.Now()
	var ticks atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			now := start.Add(time.Duration(ticks.Add(1)) * (time.Second / benchRate))
			backend.recordTraffic(traffic.Outcome{Failed: true}, now, p)
		}
	})
}

// processCPU is the user and system CPU time of this process so far.
func processCPU(b *testing.B) time.Duration {
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
		cpu := processCPU(b)
		start := time.Now()
		done := 0
		for done < b.N {
			now := <-ticker.C
			due := min(int(now.Sub(start).Seconds()*benchRate), b.N)
			for ; done < due; done++ {
				record(time.Now())
			}
		}
		b.ReportMetric(float64((processCPU(b)-cpu).Nanoseconds())/float64(b.N), "cpu-ns/outcome")
		b.ReportMetric(0, "ns/op")
	}
	b.Run("pacing_only", func(b *testing.B) {
		paced(b, func(time.Time) {})
	})
	b.Run("ring", func(b *testing.B) {
		backend := &Backend{}
		p := config.PassiveHealth{Enabled: true, Window: model.Duration(window), MaxFailures: 5, MinRequests: 10, MaxEjectedPercent: 50}
		o := traffic.Outcome{Erred: true, Reason: traffic.HTTP5xx, Failed: true}
		paced(b, func(now time.Time) { backend.recordTraffic(o, now, p) })
		b.ReportMetric(0, "goroutines")
	})
	b.Run("timer_per_failure", func(b *testing.B) {
		goroutines := runtime.NumGoroutine()
		c := newTimerPerFailureCounter(b, window)
		paced(b, func(time.Time) { c.record(true) })
		b.ReportMetric(float64(runtime.NumGoroutine()-goroutines), "goroutines")
	})
}

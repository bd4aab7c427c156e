package pool

import (
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/config"
)

// passiveTestEpoch is a fixed start for the clock the window is given.
var passiveTestEpoch = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func passiveTestWant(t *testing.T, what string, got passiveCounts, successes, failures uint32) {
	t.Helper()
	if got.Successes != successes || got.Failures != failures {
		t.Errorf("%s: counts %+v; want %d successes, %d failures", what, got, successes, failures)
	}
}

func TestPassiveWindowCountsWithinWindow(t *testing.T) {
	const window = 10 * time.Second // 500ms buckets
	var w passiveWindow
	now := passiveTestEpoch
	w.Record(now, window, true)
	w.Record(now.Add(100*time.Millisecond), window, false)
	c := w.Record(now.Add(3*time.Second), window, true)
	passiveTestWant(t, "after three outcomes", c, 1, 2)
	passiveTestWant(t, "just inside the window", w.Counts(now.Add(9*time.Second), window), 1, 2)
	// The first bucket [0, 500ms) leaves the window once the head is
	// passiveBuckets buckets later.
	passiveTestWant(t, "first bucket expired", w.Counts(now.Add(window), window), 0, 1)
	passiveTestWant(t, "all expired", w.Counts(now.Add(3*time.Second+window), window), 0, 0)
	c = w.Record(now.Add(time.Hour), window, false)
	passiveTestWant(t, "after a long gap", c, 1, 0)
}

func TestPassiveWindowSlidesBucketByBucket(t *testing.T) {
	const window = 2 * time.Second // 100ms buckets
	var w passiveWindow
	// One failure in each of 40 consecutive buckets: once the ring is full
	// it holds exactly passiveBuckets of them.
	for i := range 40 {
		c := w.Record(passiveTestEpoch.Add(time.Duration(i)*100*time.Millisecond), window, true)
		want := uint32(min(i+1, passiveBuckets))
		passiveTestWant(t, "sliding", c, 0, want)
	}
}

func TestPassiveWindowLateOutcomeGoesToItsBucket(t *testing.T) {
	const window = 2 * time.Second
	var w passiveWindow
	w.Record(passiveTestEpoch.Add(time.Second), window, false)
	// An outcome finished 300ms before the one already recorded (two
	// requests racing for the lock) still counts, in its own bucket, and
	// leaves the window 300ms earlier.
	w.Record(passiveTestEpoch.Add(700*time.Millisecond), window, true)
	passiveTestWant(t, "both counted", w.Counts(passiveTestEpoch.Add(time.Second), window), 1, 1)
	passiveTestWant(t, "late one gone first", w.Counts(passiveTestEpoch.Add(2800*time.Millisecond), window), 1, 0)
}

func TestPassiveWindowClockStepsBack(t *testing.T) {
	const window = 2 * time.Second
	var w passiveWindow
	w.Record(passiveTestEpoch, window, true)
	c := w.Record(passiveTestEpoch.Add(-time.Hour), window, true)
	passiveTestWant(t, "after the clock stepped back an hour", c, 0, 1)
	c = w.Record(passiveTestEpoch.Add(-time.Hour+time.Second), window, false)
	passiveTestWant(t, "recording goes on", c, 1, 1)
}

func TestPassiveWindowChangedWindowStartsOver(t *testing.T) {
	var w passiveWindow
	w.Record(passiveTestEpoch, 10*time.Second, true)
	w.Record(passiveTestEpoch, 10*time.Second, true)
	c := w.Record(passiveTestEpoch, 20*time.Second, false)
	passiveTestWant(t, "after a reload changed the window", c, 1, 0)
}

func TestPassiveWindowIsConstantSizeAndDoesNotAllocate(t *testing.T) {
	if size := unsafe.Sizeof(passiveWindow{}); size > 256 {
		t.Errorf("passiveWindow is %d bytes; want a small constant", size)
	}
	var w passiveWindow
	now := passiveTestEpoch
	allocs := testing.AllocsPerRun(1000, func() {
		now = now.Add(37 * time.Millisecond)
		w.Record(now, 30*time.Second, now.UnixNano()%3 == 0)
	})
	if allocs != 0 {
		t.Errorf("Record allocates %v times per call; want 0", allocs)
	}
	b := &Backend{}
	p := config.PassiveHealth{Enabled: true, Window: model.Duration(30 * time.Second), MaxFailures: 1 << 30}
	allocs = testing.AllocsPerRun(1000, func() {
		now = now.Add(37 * time.Millisecond)
		b.recordTraffic(Outcome{Erred: true, Reason: FanoutHTTP5xx, Failed: true}, now, p)
	})
	if allocs != 0 {
		t.Errorf("recordTraffic allocates %v times per call; want 0", allocs)
	}
}

func TestShouldEject(t *testing.T) {
	maxFailures := config.PassiveHealth{MaxFailures: 5, MinRequests: 10}
	ratio := config.PassiveHealth{MinSuccessRatio: 0.8, MinRequests: 10}
	for _, c := range []struct {
		name   string
		policy config.PassiveHealth
		counts passiveCounts
		want   bool
	}{
		{"one short of max_failures", maxFailures, passiveCounts{Successes: 100, Failures: 4}, false},
		{"exactly max_failures", maxFailures, passiveCounts{Successes: 100, Failures: 5}, true},
		{"max_failures needs no min_requests", maxFailures, passiveCounts{Failures: 5}, true},
		{"max_failures 0 is off", config.PassiveHealth{}, passiveCounts{Failures: 1000}, false},
		{"ratio below, too few requests", ratio, passiveCounts{Successes: 0, Failures: 9}, false},
		{"ratio below at min_requests", ratio, passiveCounts{Successes: 7, Failures: 3}, true},
		{"ratio exactly at the minimum", ratio, passiveCounts{Successes: 8, Failures: 2}, false},
		{"ratio above", ratio, passiveCounts{Successes: 95, Failures: 5}, false},
		{"ratio with min_requests 0 needs one request", config.PassiveHealth{MinSuccessRatio: 0.5}, passiveCounts{}, false},
	} {
		if got := shouldEject(c.counts, c.policy); got != c.want {
			t.Errorf("%s: shouldEject(%+v) = %v; want %v", c.name, c.counts, got, c.want)
		}
	}
}

func TestEjectionAllowed(t *testing.T) {
	for _, c := range []struct {
		ejected, configured int
		percent             float64
		want                bool
	}{
		{0, 3, 50, true},
		{1, 3, 50, false},
		{0, 2, 50, true},
		{1, 2, 50, false},
		{0, 1, 50, false},
		{0, 1, 100, true},
		{1, 10, 20, true},
		{2, 10, 20, false},
		{0, 5, 0, false},
	} {
		if got := ejectionAllowed(c.ejected, c.configured, c.percent); got != c.want {
			t.Errorf("ejectionAllowed(%d of %d, %v%%) = %v; want %v", c.ejected, c.configured, c.percent, got, c.want)
		}
	}
}

// TestRecordTrafficIsSafeUnderConcurrency records from many goroutines at
// once (run under -race) and checks that no outcome is lost.
func TestRecordTrafficIsSafeUnderConcurrency(t *testing.T) {
	const goroutines, each = 8, 500
	b := &Backend{}
	p := config.PassiveHealth{Enabled: true, Window: model.Duration(time.Hour)}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				failed := (g+i)%2 == 0
				o := Outcome{Failed: failed}
				if failed {
					o.Erred, o.Reason = true, FanoutTimeout
				}
				b.recordTraffic(o, passiveTestEpoch.Add(time.Duration(i)*time.Millisecond), p)
			}
		})
	}
	wg.Wait()
	b.mu.Lock()
	c := b.traffic.window.Counts(passiveTestEpoch, time.Hour)
	timeouts := b.traffic.errors[FanoutTimeout]
	b.mu.Unlock()
	passiveTestWant(t, "after concurrent records", c, goroutines*each/2, goroutines*each/2)
	if timeouts != goroutines*each/2 {
		t.Errorf("timeouts counted %d; want %d", timeouts, goroutines*each/2)
	}
}

// TestReadmitElapsedExactlyAtWindow: a backend whose probes cannot show
// recovery (not probed, or probe path never verified) comes back when the
// window has elapsed since its ejection, not a nanosecond before; a
// verified probed one never comes back this way.
func TestReadmitElapsedExactlyAtWindow(t *testing.T) {
	const window = 30 * time.Second
	th := health.Thresholds{Failures: 3, Successes: 2}
	for _, c := range []struct {
		name      string
		probed    bool
		probe     health.Result
		readmit   bool
		wantState health.State
	}{
		{"not probed, verified once", false, health.StatusResult(200), true, health.StateHealthy},
		{"not probed, never verified", false, health.StatusResult(404), true, health.StateUnknown},
		{"probed, probe path refused", true, health.StatusResult(404), true, health.StateUnknown},
		{"probed and verified", true, health.StatusResult(200), false, health.StateUnhealthy},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &Backend{Probe: config.HealthProbe{Enabled: c.probed}}
			b.health = b.health.Step(c.probe, th)
			if _, _, ok := b.ejectPassively(passiveTestEpoch, window); !ok {
				t.Fatal("an in-service backend was not ejected")
			}
			readmitted, _, due := b.readmitElapsed(passiveTestEpoch.Add(window-time.Nanosecond), window)
			if readmitted {
				t.Error("readmitted a nanosecond before the window elapsed")
			}
			if c.readmit && !due.Equal(passiveTestEpoch.Add(window)) {
				t.Errorf("due %v; want %v", due, passiveTestEpoch.Add(window))
			}
			readmitted, to, _ := b.readmitElapsed(passiveTestEpoch.Add(window), window)
			if readmitted != c.readmit || to != c.wantState || b.Health().Ejected == c.readmit {
				t.Errorf("when the window elapsed: readmitted %v to %v (ejected %v); want %v to %v",
					readmitted, to, b.Health().Ejected, c.readmit, c.wantState)
			}
		})
	}
}

package pool

import (
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"
)

// epoch is the fixed start of the tests' clocks.
var epoch = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// TestChargeTrafficDoesNotAllocate: counting an outcome in a backend's
// window, under its mutex, allocates nothing.
func TestChargeTrafficDoesNotAllocate(t *testing.T) {
	b := &Backend{}
	p := config.PassiveHealth{Enabled: true, Window: model.Duration(30 * time.Second), MaxFailures: 1 << 30}
	now := epoch
	allocs := testing.AllocsPerRun(1000, func() {
		now = now.Add(37 * time.Millisecond)
		b.recordTraffic(traffic.Outcome{Erred: true, Reason: traffic.HTTP5xx, Failed: true}, now, p)
	})
	if allocs != 0 {
		t.Errorf("recordTraffic allocates %v times per call; want 0", allocs)
	}
}

// TestChargeTrafficIsSafeUnderConcurrency records from many goroutines at
// once (run under -race) and checks that no outcome is lost.
func TestChargeTrafficIsSafeUnderConcurrency(t *testing.T) {
	const goroutines, each = 8, 500
	b := &Backend{}
	p := config.PassiveHealth{Enabled: true, Window: model.Duration(time.Hour)}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				failed := (g+i)%2 == 0
				o := traffic.Outcome{Failed: failed}
				if failed {
					o.Erred, o.Reason = true, traffic.Timeout
				}
				b.recordTraffic(o, epoch.Add(time.Duration(i)*time.Millisecond), p)
			}
		})
	}
	wg.Wait()
	b.mu.Lock()
	c := b.passive.Counts(epoch, time.Hour)
	timeouts := b.trafficErrors[traffic.Timeout]
	b.mu.Unlock()
	if want := uint32(goroutines * each / 2); c.Successes != want || c.Failures != want {
		t.Errorf("after concurrent records: counts %+v; want %d of each", c, want)
	}
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
			if _, _, ok := b.ejectPassively(epoch, window); !ok {
				t.Fatal("an in-service backend was not ejected")
			}
			readmitted, _, due := b.readmitElapsed(epoch.Add(window-time.Nanosecond), window)
			if readmitted {
				t.Error("readmitted a nanosecond before the window elapsed")
			}
			if c.readmit && !due.Equal(epoch.Add(window)) {
				t.Errorf("due %v; want %v", due, epoch.Add(window))
			}
			readmitted, to, _ := b.readmitElapsed(epoch.Add(window), window)
			if readmitted != c.readmit || to != c.wantState || b.Health().Ejected == c.readmit {
				t.Errorf("when the window elapsed: readmitted %v to %v (ejected %v); want %v to %v",
					readmitted, to, b.Health().Ejected, c.readmit, c.wantState)
			}
		})
	}
}

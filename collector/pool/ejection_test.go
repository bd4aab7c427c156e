package pool

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-kit/log"
	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/testclock"
)

// passiveWindow is the passive-health window of the ejection tests.
const passiveWindow = 10 * time.Second

// passiveSettings eject a backend at 3 failures in 10s, at most half
// the pool.
func passiveSettings() Settings {
	return Settings{Passive: config.PassiveHealth{
		Enabled: true, Window: model.Duration(passiveWindow), MaxFailures: 3, MaxEjectedPercent: 50,
	}}
}

// unprobedTargets are targets with probes off: only the elapsed window
// readmits them after an ejection.
func unprobedTargets(n int) []Target {
	targets := numberedTargets(n)
	for i := range targets {
		targets[i].Probe.Enabled = false
	}
	return targets
}

func newClockedPool(t *testing.T, logger log.Logger, targets []Target, s Settings) (*Pool, *testclock.Clock) {
	t.Helper()
	clock := testclock.New(epoch)
	if logger == nil {
		logger = log.NewNopLogger()
	}
	p := New(logger, clock.Now)
	if err := p.Apply(targets, s); err != nil {
		t.Fatal(err)
	}
	return p, clock
}

var failedOutcome = traffic.Outcome{Erred: true, Reason: traffic.HTTP5xx, Failed: true}

// failTraffic records n failed fan-out requests to b.
func failTraffic(p *Pool, b *Backend, n int) {
	for range n {
		b.chargeTraffic(failedOutcome)
	}
}

func selectedNames(p *Pool) string {
	selected, _, _, _ := p.Selection()
	return fmt.Sprint(names(selected))
}

// TestChargeTrafficEjectsUpToMaxEjectedPercent: failing traffic ejects a
// backend at max_failures, never more than max_ejected_percent of the pool,
// and Selection readmits the unprobed ones exactly when the window elapsed.
func TestChargeTrafficEjectsUpToMaxEjectedPercent(t *testing.T) {
	var buf bytes.Buffer
	p, clock := newClockedPool(t, log.NewLogfmtLogger(&buf), unprobedTargets(4), passiveSettings())
	bs := p.Backends()

	failTraffic(p, bs[0], 2)
	bs[0].chargeTraffic(traffic.Outcome{}) // a success does not eject
	if got := selectedNames(p); got != "[b0 b1 b2 b3]" {
		t.Fatalf("after 2 failures Selection() = %s, want every backend", got)
	}
	failTraffic(p, bs[0], 1)
	if got := selectedNames(p); got != "[b1 b2 b3]" {
		t.Fatalf("after 3 failures Selection() = %s, want b0 ejected", got)
	}
	s := bs[0].Snapshot()
	if !s.Health.Ejected || s.Traffic.Ejections != 1 || s.Traffic.Errors[traffic.HTTP5xx] != 3 || s.Transitions[health.StateUnhealthy] != 1 {
		t.Errorf("b0 after its ejection: %+v", s)
	}
	if !strings.Contains(buf.String(), "Backend ejected by passive health") || !strings.Contains(buf.String(), "readmission=window") {
		t.Errorf("ejection log:\n%s", buf.String())
	}

	clock.Advance(time.Second)
	failTraffic(p, bs[1], 3)
	// b2 fails as much, but a third ejected backend would be 75% of the pool.
	failTraffic(p, bs[2], 5)
	if got := selectedNames(p); got != "[b2 b3]" {
		t.Fatalf("Selection() = %s, want b0 and b1 ejected and b2 spared by max_ejected_percent", got)
	}
	if s := bs[2].Snapshot(); s.Health.Ejected || s.Traffic.Ejections != 0 || s.Traffic.Errors[traffic.HTTP5xx] != 5 {
		t.Errorf("b2 spared: %+v", s)
	}

	clock.Advance(passiveWindow - time.Second - time.Nanosecond)
	if got := selectedNames(p); got != "[b2 b3]" {
		t.Fatalf("a nanosecond before b0's window elapsed Selection() = %s", got)
	}
	clock.Advance(time.Nanosecond)
	if got := selectedNames(p); got != "[b0 b2 b3]" {
		t.Fatalf("when b0's window elapsed Selection() = %s, want b0 readmitted", got)
	}
	if h := bs[0].Health(); h.Ejected || h.State != health.StateUnknown {
		t.Errorf("b0 readmitted as %+v, want unknown (never verified)", h)
	}
	// b0 comes back to an empty window: one more failure does not eject it.
	failTraffic(p, bs[0], 1)
	clock.Advance(time.Second)
	if got := selectedNames(p); got != "[b0 b1 b2 b3]" {
		t.Fatalf("when b1's window elapsed Selection() = %s, want every backend", got)
	}
}

// TestPassiveHealthOffOnlyCounts: with passive health off, failing traffic
// is counted and ejects nothing.
func TestPassiveHealthOffOnlyCounts(t *testing.T) {
	s := passiveSettings()
	s.Passive.Enabled = false
	p, _ := newClockedPool(t, nil, unprobedTargets(2), s)
	b := p.Backends()[0]
	failTraffic(p, b, 10)
	b.chargeTraffic(traffic.Outcome{Erred: true, Reason: traffic.InvalidBody})
	if snap := b.Snapshot(); snap.Health.Ejected || snap.Traffic.Errors[traffic.HTTP5xx] != 10 || snap.Traffic.Errors[traffic.InvalidBody] != 1 {
		t.Errorf("with passive health off: %+v", snap)
	}
}

// TestProbedVerifiedBackendWaitsForProbes: a probed backend whose probe
// path once told health apart is readmitted by ok probes only, not by the
// elapsed window.
func TestProbedVerifiedBackendWaitsForProbes(t *testing.T) {
	p, clock := newClockedPool(t, nil, numberedTargets(2), passiveSettings())
	b := p.Backends()[0]
	// Both have a verdict: an ejection's floor counts only those.
	withVerdicts(p, 2)
	failTraffic(p, b, 3)
	clock.Advance(10 * passiveWindow)
	if got := selectedNames(p); got != "[b1]" {
		t.Fatalf("long after the window Selection() = %s, want b0 still ejected", got)
	}
	feed(b, health.StatusResult(200), defaultProbe.Successes)
	if got := selectedNames(p); got != "[b0 b1]" {
		t.Fatalf("after %d ok probes Selection() = %s, want b0 back", defaultProbe.Successes, got)
	}
}

// TestApplyShorterWindowReadmitsSooner: a reload that shortens the window
// readmits a backend ejected before it once the new window has elapsed,
// also when its client configuration changed with the reload (the new
// backend object inherits the ejection).
func TestApplyShorterWindowReadmitsSooner(t *testing.T) {
	p, clock := newClockedPool(t, nil, unprobedTargets(2), passiveSettings())
	failTraffic(p, p.Backends()[0], 3)

	s := passiveSettings()
	s.Passive.Window = model.Duration(2 * time.Second)
	targets := unprobedTargets(2)
	targets[0].ClientConfig.Authorization = &commoncfg.Authorization{Type: "Bearer", Credentials: "changed"}
	if err := p.Apply(targets, s); err != nil {
		t.Fatal(err)
	}
	if got := selectedNames(p); got != "[b1]" {
		t.Fatalf("right after the reload Selection() = %s, want b0 still ejected", got)
	}
	clock.Advance(2 * time.Second)
	if got := selectedNames(p); got != "[b0 b1]" {
		t.Fatalf("when the new 2s window elapsed Selection() = %s, want b0 readmitted", got)
	}
}

// TestChargeTrafficOnRemovedBackendEjectsNothing: a fan-out round that
// finishes after a reload removed its backend counts on the old object but
// cannot eject it from the pool, nor use up max_ejected_percent.
func TestChargeTrafficOnRemovedBackendEjectsNothing(t *testing.T) {
	p, _ := newClockedPool(t, nil, unprobedTargets(3), passiveSettings())
	removed := p.Backends()[2]
	if err := p.Apply(unprobedTargets(2), passiveSettings()); err != nil {
		t.Fatal(err)
	}
	failTraffic(p, removed, 3)
	if removed.Health().Ejected {
		t.Error("a removed backend was ejected")
	}
	failTraffic(p, p.Backends()[0], 3)
	if got := selectedNames(p); got != "[b1]" {
		t.Errorf("Selection() = %s, want b0 ejected (1 of 2 is 50%%)", got)
	}
}

// TestRunReadmitsWithoutASelection: Run readmits an ejected backend when its
// window elapses, with no fan-out round to notice.
func TestRunReadmitsWithoutASelection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(nil, nil)
		if err := p.Apply(unprobedTargets(2), passiveSettings()); err != nil {
			t.Fatal(err)
		}
		startRun(t, p)

		b := p.Backends()[0]
		time.Sleep(time.Second)
		failTraffic(p, b, 3)
		synctest.Wait()
		if !b.Health().Ejected {
			t.Fatal("not ejected")
		}
		time.Sleep(passiveWindow - time.Nanosecond)
		synctest.Wait()
		if !b.Health().Ejected {
			t.Fatal("readmitted before the window elapsed")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if b.Health().Ejected {
			t.Error("Run did not readmit the backend when its window elapsed")
		}
	})
}

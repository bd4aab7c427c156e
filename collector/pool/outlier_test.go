package pool

import (
	"bytes"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-kit/log"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/outlier"
	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/testclock"
)

// detectingPool is n backends under outlier detection judging from 5
// rounds, with the readiness budget given (nil: min_available 1).
func detectingPool(t *testing.T, n int, enforcing bool, minAvailable *config.IntOrPercent, probed bool) (*Pool, *testclock.Clock, *bytes.Buffer) {
	t.Helper()
	clock := testclock.New(epoch)
	logs := &bytes.Buffer{}
	p := New(log.NewLogfmtLogger(log.NewSyncWriter(logs)), clock.Now)
	od := config.DefaultOutlierDetection()
	od.Enabled, od.Enforcing, od.MinRounds = true, enforcing, 5
	targets := numberedTargets(n)
	for i := range targets {
		targets[i].Probe.Enabled = probed
	}
	if err := p.Apply(targets, Settings{Outlier: od, Readiness: config.Readiness{MinAvailable: minAvailable}}); err != nil {
		t.Fatal(err)
	}
	return p, clock, logs
}

// rounds feeds n rounds, one a second, in which backend i failed when
// failing[i] and took latency[i] (1ms when not given).
func rounds(p *Pool, clock *testclock.Clock, n int, failing map[int]bool, latency map[int]time.Duration) {
	for range n {
		selected, _, _, _ := p.Selection()
		samples := make([]RoundSample, 0, len(selected))
		for _, b := range selected {
			i := int(b.Name[1] - '0')
			s := RoundSample{Backend: b, Latency: time.Millisecond}
			if d, ok := latency[i]; ok {
				s.Latency = d
			}
			if failing[i] {
				s.Outcome = traffic.Outcome{Erred: true, Failed: true, Reason: traffic.HTTP5xx}
			}
			samples = append(samples, s)
		}
		p.RecordRound(samples)
		clock.Advance(time.Second)
	}
}

func TestOutlierEjectedAndReadmittedAfterTimeAndProbes(t *testing.T) {
	p, clock, logs := detectingPool(t, 3, true, nil, true)
	b1 := p.Backends()[1]
	// Verified: probes must vouch for b1. The others have a verdict too,
	// which the floor counts.
	withVerdicts(p, 3)
	rounds(p, clock, 5, map[int]bool{1: true}, nil)
	if got := b1.Served().State(); got != health.ServedEjected {
		t.Fatalf("b1 failing alone: %s; want ejected", got)
	}
	if selected, _, _, _ := p.Selection(); len(selected) != 2 {
		t.Errorf("%d selected; want the 2 others", len(selected))
	}
	snap := b1.Snapshot().Outlier
	if snap.Ejections[outlier.ReasonFailure][1] != 1 || snap.Until != epoch.Add(4*time.Second+30*time.Second) {
		t.Errorf("ejection %+v; want one, until 30s after", snap)
	}
	if !strings.Contains(logs.String(), `msg="Backend ejected by outlier detection"`) {
		t.Errorf("no ejection log line:\n%s", logs)
	}
	// Ok probes before the ejection is over do count, but do not readmit.
	feed(b1, health.StatusResult(200), 2)
	clock.Advance(28 * time.Second)
	if p.Selection(); b1.Served().State() != health.ServedEjected {
		t.Fatalf("readmitted before its 30s were over")
	}
	// Over: the probes had vouched already.
	clock.Advance(2 * time.Second)
	if p.Selection(); b1.Served().State() != health.ServedHealthy {
		t.Fatalf("after 30s and 2 ok probes: %s; want healthy", b1.Served().State())
	}
	// Ejected again right away: twice as long.
	rounds(p, clock, 5, map[int]bool{1: true}, nil)
	if snap := b1.Snapshot().Outlier; !snap.Ejected || snap.Until.Sub(snap.Since) != time.Minute {
		t.Fatalf("second ejection %+v; want 1m", snap)
	}
	// Over, but a failed probe resets the run: one ok is not enough.
	clock.Advance(time.Minute)
	feed(b1, health.StatusResult(503), 1)
	feed(b1, health.StatusResult(200), 1)
	if p.Selection(); b1.Served().State() != health.ServedEjected {
		t.Fatalf("readmitted with 1 ok probe after a failure")
	}
	feed(b1, health.StatusResult(200), 1)
	if got := b1.Served(); !got.InService() {
		t.Fatalf("after 2 ok probes, served: %s; want back in service", got.State())
	}
}

func TestOutlierUnprobedReadmittedWhenOver(t *testing.T) {
	p, clock, _ := detectingPool(t, 2, true, nil, false)
	rounds(p, clock, 5, nil, map[int]time.Duration{0: 150 * time.Millisecond})
	b0 := p.Backends()[0]
	if snap := b0.Snapshot().Outlier; b0.Served().State() != health.ServedEjected || snap.Reason != outlier.ReasonLatency {
		t.Fatalf("150ms among 1ms: %s %+v; want ejected for latency", b0.Served().State(), snap)
	}
	clock.Advance(30 * time.Second)
	if b := p.Budget(); b.CurrentHealthy != 2 {
		t.Errorf("budget after the ejection was over: %+v; want both back", b)
	}
}

func TestOutlierNeverEjectsBelowTheBudget(t *testing.T) {
	three := &config.IntOrPercent{Value: 3}
	p, clock, logs := detectingPool(t, 3, true, three, false)
	rounds(p, clock, 40, map[int]bool{2: true}, nil)
	if got := p.Backends()[2].Served().State(); got == health.ServedEjected {
		t.Fatalf("ejected below desired_healthy 3")
	}
	// 36 rounds past min_rounds over 40s: once per 30s window.
	if got := p.Snapshot().Suppressed[outlier.ReasonFailure]; got != 2 {
		t.Errorf("%d suppressions; want 2, once a window", got)
	}
	if got := p.Backends()[2].Snapshot().Outlier.Ejections; got != ([outlier.NumReasons][2]uint64{}) {
		t.Errorf("suppressed ejections counted as ejections: %v", got)
	}
	if !strings.Contains(logs.String(), "readiness budget allows no disruption") {
		t.Errorf("no suppression log line:\n%s", logs)
	}
	// With room in the budget the same backend goes.
	p2, clock2, _ := detectingPool(t, 3, true, &config.IntOrPercent{Value: 2}, false)
	rounds(p2, clock2, 5, map[int]bool{2: true}, nil)
	if got := p2.Backends()[2].Served().State(); got != health.ServedEjected {
		t.Errorf("desired_healthy 2 of 3: %s; want ejected", got)
	}
}

func TestOutlierDryRunChangesNothing(t *testing.T) {
	p, clock, logs := detectingPool(t, 3, false, nil, false)
	rounds(p, clock, 5, map[int]bool{0: true}, nil)
	b0 := p.Backends()[0]
	if got := b0.Served().State(); got != health.ServedUnknown {
		t.Fatalf("dry run changed the state to %s", got)
	}
	if selected, _, _, _ := p.Selection(); len(selected) != 3 {
		t.Errorf("dry run: %d selected; want 3", len(selected))
	}
	if snap := b0.Snapshot().Outlier; snap.Ejections[outlier.ReasonFailure] != [2]uint64{1, 0} || !snap.Ejected || snap.Enforced {
		t.Errorf("dry run record %+v; want one ejection with enforced=false", snap)
	}
	if b0.Snapshot().Transitions[health.ServedEjected] != 0 {
		t.Errorf("dry run counted a transition")
	}
	if !strings.Contains(logs.String(), "would eject") {
		t.Errorf("no dry-run log line:\n%s", logs)
	}
}

func TestOutlierIgnoresLocalAndCorrelated(t *testing.T) {
	p, clock, _ := detectingPool(t, 2, true, nil, false)
	a, b := p.Backends()[0], p.Backends()[1]
	for range 10 {
		p.RecordRound([]RoundSample{
			{Backend: a, Outcome: traffic.Outcome{Erred: true, Failed: true, Reason: traffic.HTTP5xx, Correlated: true}},
			{Backend: b, Outcome: traffic.Outcome{Erred: true, Reason: traffic.Local}},
		})
		clock.Advance(time.Second)
	}
	if a.Served().State() == health.ServedEjected || b.Served().State() == health.ServedEjected {
		t.Errorf("ejected on local or correlated outcomes")
	}
}

// TestRunEndsOutlierEjectionWhenOver: Run ends the ejection of a backend no
// probe can vouch for once it is over, with no read of the pool to
// notice.
func TestRunEndsOutlierEjectionWhenOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		od := config.DefaultOutlierDetection()
		od.Enabled, od.Enforcing, od.MinRounds = true, true, 5
		targets := numberedTargets(2)
		for i := range targets {
			targets[i].Probe.Enabled = false
		}
		p := New(nil, nil)
		if err := p.Apply(targets, Settings{Outlier: od}); err != nil {
			t.Fatal(err)
		}
		startRun(t, p)

		bs := p.Backends()
		for range 5 {
			p.RecordRound([]RoundSample{{Backend: bs[0], Latency: 150 * time.Millisecond}, {Backend: bs[1], Latency: time.Millisecond}})
			time.Sleep(time.Second)
		}
		if got := bs[0].Served().State(); got != health.ServedEjected {
			t.Fatalf("150ms among 1ms: %s, want ejected", got)
		}
		time.Sleep(time.Until(bs[0].Snapshot().Outlier.Until) - time.Nanosecond)
		synctest.Wait()
		if got := bs[0].Served().State(); got != health.ServedEjected {
			t.Fatalf("%s a nanosecond before the ejection was over, want ejected", got)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if got := bs[0].Served().State(); got == health.ServedEjected {
			t.Error("Run did not end the ejection when it was over")
		}
	})
}

// TestBudgetWithJudgesAsReadiness: the budget a maintenance request is
// judged by counts what readiness counts, so an outlier-ejected backend
// is out of service in both, and an unforced entry cannot take the pool
// below the budget that /ready then fails on.
func TestBudgetWithJudgesAsReadiness(t *testing.T) {
	p, clock, _ := detectingPool(t, 4, true, &config.IntOrPercent{Value: 2}, false)
	rounds(p, clock, 5, map[int]bool{1: true}, nil)
	if got := p.Backends()[1].Served().State(); got != health.ServedEjected {
		t.Fatalf("b1 failing alone: %s; want ejected", got)
	}
	ready := p.Budget()
	judged, inService, err := p.BudgetWith(nil, "b0")
	if err != nil || judged != ready || ready.CurrentHealthy != 3 || !inService {
		t.Fatalf("BudgetWith %+v (b0 in service %v, %v), Budget %+v; want both 3 in service", judged, inService, err, ready)
	}
	if _, inService, _ := p.BudgetWith(nil, "b1"); inService {
		t.Error("BudgetWith counts the ejected b1 in service")
	}
	judged, _, _ = p.BudgetWith([]entries.Entry{{Backend: "b0"}}, "b2")
	if judged.DisruptionsAllowed != 0 || judged.CurrentHealthy != 2 {
		t.Errorf("with b0 in maintenance: %+v; want 2 in service and no disruption left", judged)
	}
}

// TestRoundsWithoutOutlierDetectionSkipJudgeMu: with outlier detection
// off, a round is judged without the pool-wide judgeMu, which pool-wide
// work holds for as long as it walks every backend: rounds on their
// clients' request paths must not queue behind it.
func TestRoundsWithoutOutlierDetectionSkipJudgeMu(t *testing.T) {
	p := newPool(t, numberedTargets(2), Settings{})
	b := p.Backends()[0]
	p.judgeMu.Lock()
	defer p.judgeMu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.judgeRound([]RoundSample{{Backend: b, Latency: time.Millisecond}})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a round with outlier detection off waited for judgeMu")
	}
}

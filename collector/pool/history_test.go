package pool

import (
	"testing"
	"time"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/history"
)

// numberedResult is the i-th result of a run: status 200+i%100, i ms
// long, i seconds after the epoch.
func numberedResult(i int) health.Result {
	r := health.StatusResult(200 + i%100)
	r.Time, r.Duration = epoch.Add(time.Duration(i)*time.Second), time.Duration(i)*time.Millisecond
	return r
}

// TestSnapshotWithHistoryCarriesTheResults: the status page's snapshot
// holds each backend's recorded results, oldest first, as the history ring
// keeps them; the snapshot for /metrics and /healthz leaves them out.
func TestSnapshotWithHistoryCarriesTheResults(t *testing.T) {
	p := newPool(t, namedTargets("a"), Settings{})
	b := p.Backends()[0]
	if got := p.SnapshotWithHistory().Backends[0].History; len(got) != 0 {
		t.Fatalf("%d results before any probe", len(got))
	}
	for i := range history.ProbeLength + 1 {
		b.RecordProbe(numberedResult(i))
	}
	got := p.SnapshotWithHistory().Backends[0].History
	if len(got) != history.ProbeLength || got[0].StatusCode != numberedResult(1).StatusCode ||
		!got[len(got)-1].Time.Equal(numberedResult(history.ProbeLength).Time) {
		t.Fatalf("%d results kept, first %+v last %+v; want the last %d", len(got), got[0], got[len(got)-1], history.ProbeLength)
	}
	if p.Snapshot().Backends[0].History != nil {
		t.Error("Snapshot carries the history; only SnapshotWithHistory may")
	}
}

// TestRecordDoesNotAllocate: recording a probe result, history and
// latency histogram included, allocates nothing.
func TestRecordDoesNotAllocate(t *testing.T) {
	b := newPool(t, namedTargets("a"), Settings{}).Backends()[0]
	r := numberedResult(1)
	b.RecordProbe(r) // The histogram's native bucket for r exists from now on.
	if allocs := testing.AllocsPerRun(1000, func() { b.RecordProbe(r) }); allocs != 0 {
		t.Errorf("Record allocates %v times per result, want 0", allocs)
	}
}

// BenchmarkRecordProbe is the cost of recording one probe result: the
// state machine step, the counters, the latency histogram and the history
// ring. It must not allocate.
func BenchmarkRecordProbe(b *testing.B) {
	p := New(nil, nil)
	if err := p.Apply(namedTargets("a"), Settings{}); err != nil {
		b.Fatal(err)
	}
	backend := p.Backends()[0]
	results := [4]health.Result{numberedResult(1), numberedResult(2), numberedResult(3), numberedResult(4)}
	for _, r := range results {
		backend.RecordProbe(r)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		backend.RecordProbe(results[i%len(results)])
		i++
	}
}

// TestTransitionLog: the pool's last state changes, newest first, with
// what caused each: a probe (its class and status or reason), a
// maintenance, an ejection by fan-out traffic and the readmission after
// it; at most history.TransitionLength of them.
func TestTransitionLog(t *testing.T) {
	targets := append(namedTargets("a"), unprobedTargets(2)...)
	p, clock := newClockedPool(t, nil, targets, passiveSettings())
	bs := p.Backends()
	a, unprobed := bs[0], bs[1]
	a.RecordProbe(okResult)
	clock.Advance(time.Second)
	feed(a, health.TimeoutResult("no answer"), 3)
	clock.Advance(time.Second)
	p.SetMaintenance([]entries.Entry{{Backend: "a", Reason: "x"}}, entries.KeptByClock)
	clock.Advance(time.Second)
	failTraffic(p, unprobed, 3)
	clock.Advance(passiveWindow)
	p.Selection()

	want := []history.Transition{
		{Backend: unprobed.Name, From: health.ServedUnhealthy, To: health.ServedUnknown, Cause: history.CauseReadmission},
		{Backend: unprobed.Name, From: health.ServedUnknown, To: health.ServedUnhealthy, Cause: history.CauseEjection},
		{Backend: "a", From: health.ServedUnhealthy, To: health.ServedMaintenance, Cause: history.CauseMaintenance},
		{Backend: "a", From: health.ServedHealthy, To: health.ServedUnhealthy, Cause: history.CauseProbe, Class: health.ClassFailed, Reason: health.ReasonTimeout},
		{Backend: "a", From: health.ServedUnknown, To: health.ServedHealthy, Cause: history.CauseProbe, Class: health.ClassOK, StatusCode: 200},
	}
	got := p.SnapshotWithHistory().Transitions
	if len(got) != len(want) {
		t.Fatalf("%d transitions logged, want %d: %+v", len(got), len(want), got)
	}
	times := []time.Time{epoch.Add(3*time.Second + passiveWindow), epoch.Add(3 * time.Second),
		epoch.Add(2 * time.Second), epoch.Add(time.Second), epoch}
	for i := range want {
		want[i].Time = times[i]
		if got[i] != want[i] {
			t.Errorf("transition %d = %+v, want %+v", i, got[i], want[i])
		}
	}

	p.SetMaintenance(nil, entries.KeptByClock)
	for range history.TransitionLength {
		feed(a, okResult, 2)
		feed(a, downResult, 3)
	}
	if got := p.SnapshotWithHistory().Transitions; len(got) != history.TransitionLength || got[0].To != health.ServedUnhealthy || got[0].StatusCode != 503 {
		t.Errorf("after many changes: %d kept, newest %+v; want %d, the last ejection by a 503", len(got), got[0], history.TransitionLength)
	}
}

// TestProbeHistoriesOfTheNamedBackends: the histories come in the order
// asked, nil for a backend the pool does not have, and the snapshot the
// status page pages leaves every history out but keeps the transitions.
func TestProbeHistoriesOfTheNamedBackends(t *testing.T) {
	p := newPool(t, namedTargets("a", "b"), Settings{})
	bs := p.Backends()
	bs[0].RecordProbe(numberedResult(1))
	bs[1].RecordProbe(numberedResult(2))
	bs[1].RecordProbe(numberedResult(3))
	got := p.ProbeHistories([]string{"b", "gone", "a"})
	if len(got) != 3 || len(got[0]) != 2 || got[1] != nil || len(got[2]) != 1 || got[2][0].StatusCode != numberedResult(1).StatusCode {
		t.Errorf("histories %+v, want b's two results, none, a's one", got)
	}
	s := p.SnapshotWithTransitions()
	if s.Backends[0].History != nil || s.Backends[1].History != nil || len(s.Transitions) == 0 {
		t.Errorf("snapshot carries histories %v %v or no transitions %v", s.Backends[0].History, s.Backends[1].History, s.Transitions)
	}
}

package pool

import (
	"fmt"
	"testing"
	"time"

	"github.com/probegate/probegate/collector/health"
)

// historyTestResult is the i-th result of a run: statuses 200 upwards
// (201, 202, ... say which it was), i ms long, i seconds after the epoch.
func historyTestResult(i int) health.Result {
	r := health.StatusResult(200 + i%100)
	r.Time = passiveTestEpoch.Add(time.Duration(i) * time.Second)
	r.Duration = time.Duration(i) * time.Millisecond
	return r
}

// TestHistoryKeepsTheLastResults: the history holds the last HistoryLength
// results, oldest first, each as it was recorded.
func TestHistoryKeepsTheLastResults(t *testing.T) {
	p := newTestPool(t, testTargets("a"), Settings{})
	b := p.Backends()[0]
	if got := p.SnapshotWithHistory().Backends[0].History; len(got) != 0 {
		t.Fatalf("%d results before any probe", len(got))
	}
	for n, want := range []int{1, 59, 60, 61, 135} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			b := newTestPool(t, testTargets("a"), Settings{}).Backends()[0]
			for i := range want {
				b.Record(historyTestResult(i))
			}
			got := b.snapshotWithHistory().History
			if len(got) != min(want, HistoryLength) {
				t.Fatalf("%d results kept of %d, want %d", len(got), want, min(want, HistoryLength))
			}
			first := want - len(got)
			for k, rec := range got {
				r := historyTestResult(first + k)
				if !rec.Time.Equal(r.Time) || rec.Duration != r.Duration || rec.StatusCode != r.StatusCode || rec.Class != r.Class || rec.Reason != r.Reason {
					t.Fatalf("result %d = %+v, want the result %d: %+v", k, rec, first+k, r)
				}
			}
		})
	}

	// Kinds without an HTTP status keep their answer; failures their reason.
	b.Record(health.Result{Class: health.ClassFailed, Reason: health.ReasonGRPCNotServing, Status: "NOT_SERVING"})
	b.Record(health.TimeoutResult("no answer"))
	got := p.SnapshotWithHistory().Backends[0].History
	if len(got) != 2 || got[0].Status != "NOT_SERVING" || got[0].Reason != health.ReasonGRPCNotServing || got[1].Reason != health.ReasonTimeout || got[1].Status != "" {
		t.Errorf("history %+v", got)
	}
	if p.Snapshot().Backends[0].History != nil {
		t.Error("Snapshot carries the history; only SnapshotWithHistory may")
	}
}

// TestHistoryKeepsTheFirstAnswersOfAKind: the history keeps any kind's
// answers, as many distinct ones as it has slots; a further one is kept
// as none, and the ones it has keep their names.
func TestHistoryKeepsTheFirstAnswersOfAKind(t *testing.T) {
	var h probeHistory
	answers := make([]string, historyStatusSlots+1)
	for i := range answers {
		answers[i] = fmt.Sprintf("ANSWER_%d", i)
		h.add(health.Result{Class: health.ClassRefused, Status: answers[i]})
	}
	h.add(health.Result{Class: health.ClassOK, Status: answers[0]})
	h.add(health.StatusResult(200))
	got := h.records()
	want := append(append(answers[:historyStatusSlots:historyStatusSlots], "", answers[0]), "")
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i, rec := range got {
		if rec.Status != want[i] {
			t.Errorf("record %d: status %q, want %q", i, rec.Status, want[i])
		}
	}
}

// TestRecordDoesNotAllocate: recording a probe result, history and
// latency histogram included, allocates nothing.
func TestRecordDoesNotAllocate(t *testing.T) {
	b := newTestPool(t, testTargets("a"), Settings{}).Backends()[0]
	r := historyTestResult(1)
	b.Record(r) // The histogram's native bucket for r exists from now on.
	if allocs := testing.AllocsPerRun(1000, func() { b.Record(r) }); allocs != 0 {
		t.Errorf("Record allocates %v times per result, want 0", allocs)
	}
}

// BenchmarkRecordProbe is the cost of recording one probe result: the
// state machine step, the counters, the latency histogram and the history
// ring. It must not allocate.
func BenchmarkRecordProbe(b *testing.B) {
	p := New(nil, nil)
	if err := p.Apply(testTargets("a"), Settings{}); err != nil {
		b.Fatal(err)
	}
	backend := p.Backends()[0]
	results := [4]health.Result{historyTestResult(1), historyTestResult(2), historyTestResult(3), historyTestResult(4)}
	for _, r := range results {
		backend.Record(r)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		backend.Record(results[i%len(results)])
		i++
	}
}

// TestTransitionLog: the pool's last state changes, newest first, with
// what caused each: a probe (its class and status or reason), a
// maintenance, an ejection by fan-out traffic and the readmission after
// it; at most TransitionLogLength of them.
func TestTransitionLog(t *testing.T) {
	targets := append(testTargets("a"), unprobedTargets(2)...)
	p, clock := newClockedPool(t, nil, targets, ejectionTestSettings())
	bs := p.Backends()
	a, unprobed := bs[0], bs[1]
	a.Record(okResult)
	clock.Advance(time.Second)
	feed(a, health.TimeoutResult("no answer"), 3)
	clock.Advance(time.Second)
	p.SetMaintenance([]Maintenance{{Backend: "a", Reason: "x"}})
	clock.Advance(time.Second)
	failTraffic(p, unprobed, 3)
	clock.Advance(ejectionTestWindow)
	p.Select()

	want := []Transition{
		{Backend: unprobed.Name, From: health.StateUnhealthy, To: health.StateUnknown, Cause: CauseReadmission},
		{Backend: unprobed.Name, From: health.StateUnknown, To: health.StateUnhealthy, Cause: CauseEjection},
		{Backend: "a", From: health.StateUnhealthy, To: health.StateMaintenance, Cause: CauseMaintenance},
		{Backend: "a", From: health.StateHealthy, To: health.StateUnhealthy, Cause: CauseProbe, Class: health.ClassFailed, Reason: health.ReasonTimeout},
		{Backend: "a", From: health.StateUnknown, To: health.StateHealthy, Cause: CauseProbe, Class: health.ClassOK, StatusCode: 200},
	}
	got := p.SnapshotWithHistory().Transitions
	if len(got) != len(want) {
		t.Fatalf("%d transitions logged, want %d: %+v", len(got), len(want), got)
	}
	times := []time.Time{passiveTestEpoch.Add(3*time.Second + ejectionTestWindow), passiveTestEpoch.Add(3 * time.Second),
		passiveTestEpoch.Add(2 * time.Second), passiveTestEpoch.Add(time.Second), passiveTestEpoch}
	for i := range want {
		want[i].Time = times[i]
		if got[i] != want[i] {
			t.Errorf("transition %d = %+v, want %+v", i, got[i], want[i])
		}
	}

	p.SetMaintenance(nil)
	for range TransitionLogLength {
		feed(a, okResult, 2)
		feed(a, downResult, 3)
	}
	if got := p.SnapshotWithHistory().Transitions; len(got) != TransitionLogLength || got[0].To != health.StateUnhealthy || got[0].StatusCode != 503 {
		t.Errorf("after many changes: %d kept, newest %+v; want %d, the last ejection by a 503", len(got), got[0], TransitionLogLength)
	}
}

package outlier

import (
	"testing"
	"time"
)

// TestStateEjectsOnceAndForgetsTheWindow: a second ejection of an ejected
// backend changes nothing; an ejection counts itself by reason and
// enforcement, the ejected backend records no rounds and is not judged,
// and it comes back to an empty window.
func TestStateEjectsOnceAndForgetsTheWindow(t *testing.T) {
	s := testSettings()
	var st State
	for i := range 20 {
		st.Record(epoch.Add(time.Duration(i)*time.Second), s.Window, true, time.Millisecond)
	}
	e, ok := st.Eject(epoch.Add(20*time.Second), ReasonFailure, s, true)
	if !ok || !st.Enforced() || e.Until.Sub(e.Since) != s.BaseEjection || e.Multiplier != 1 {
		t.Fatalf("first ejection: %+v ok %v enforced %v", e, ok, st.Enforced())
	}
	if _, ok := st.Eject(epoch.Add(21*time.Second), ReasonLatency, s, true); ok {
		t.Error("an ejected backend was ejected again")
	}
	st.Record(epoch.Add(22*time.Second), s.Window, true, time.Millisecond)
	if _, judged := st.Summary(epoch.Add(22*time.Second), s); judged {
		t.Error("an ejected backend is judged")
	}
	if got := st.Snapshot().Ejections; got != [NumReasons][2]uint64{ReasonFailure: {0, 1}} {
		t.Errorf("ejections %v, want one enforced for failure", got)
	}
	if ended, _ := st.Readmit(e.Until, 0); !ended {
		t.Fatal("an ejection over and needing no probes did not end")
	}
	if sum, judged := st.Summary(e.Until, s); !judged || sum.Rounds != 0 {
		t.Errorf("after readmission: judged %v with %d rounds, want judged on an empty window", judged, sum.Rounds)
	}
}

// TestStateReadmitsWhenOverAndProbesVouch: readmission waits for the
// ejection to be over and for the ok probes in a row asked for; a
// failed probe starts the count again.
func TestStateReadmitsWhenOverAndProbesVouch(t *testing.T) {
	s := testSettings()
	var st State
	e, _ := st.Eject(epoch, ReasonLatency, s, true)
	if until, pending := st.Pending(epoch); !pending || !until.Equal(e.Until) {
		t.Fatalf("Pending = %v %v, want %v true", until, pending, e.Until)
	}
	st.Probe(true)
	if ended, _ := st.Readmit(e.Until.Add(-time.Nanosecond), 1); ended {
		t.Error("readmitted before the ejection was over")
	}
	if _, pending := st.Pending(e.Until); pending {
		t.Error("an ejection that is over is pending")
	}
	st.Probe(false)
	st.Probe(true)
	if ended, _ := st.Readmit(e.Until, 2); ended || st.OKProbes() != 1 {
		t.Errorf("readmitted after %d ok probes in a row, want 2", st.OKProbes())
	}
	st.Probe(true)
	if ended, enforced := st.Readmit(e.Until, 2); !ended || !enforced || st.Enforced() {
		t.Errorf("over with 2 ok probes: ended %v enforced %v, still held out %v", ended, enforced, st.Enforced())
	}
	if st.Probe(true) {
		t.Error("a readmitted backend counts probes as ejected")
	}
}

// TestStateDryRunHoldsNothingOut: a dry run's ejection is recorded, not
// enforced, and its end says so.
func TestStateDryRunHoldsNothingOut(t *testing.T) {
	s := testSettings()
	var st State
	e, ok := st.Eject(epoch, ReasonFailure, s, false)
	if !ok || st.Enforced() || !st.Snapshot().Ejected || st.Snapshot().Ejections[ReasonFailure] != [2]uint64{1, 0} {
		t.Fatalf("dry run: ok %v enforced %v snapshot %+v", ok, st.Enforced(), st.Snapshot())
	}
	if ended, enforced := st.Readmit(e.Until, 0); !ended || enforced {
		t.Errorf("dry run's end: ended %v enforced %v, want true false", ended, enforced)
	}
}

// TestStateSuppressesOnceAWindow: a lasting outlier the budget keeps in
// is counted once a window, and again after a clock that stepped back.
func TestStateSuppressesOnceAWindow(t *testing.T) {
	const window = 30 * time.Second
	var st State
	for _, c := range []struct {
		at   time.Duration
		want bool
	}{{0, true}, {time.Second, false}, {window - time.Nanosecond, false}, {window, true}, {-time.Hour, true}} {
		if got := st.Suppress(epoch.Add(c.at), window); got != c.want {
			t.Errorf("Suppress at %v = %v, want %v", c.at, got, c.want)
		}
	}
}

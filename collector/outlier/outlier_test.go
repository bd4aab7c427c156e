package outlier

import (
	"testing"
	"time"
)

var epoch = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func testSettings() Settings {
	return Settings{Window: 30 * time.Second, MinRounds: 20, FailureGap: 0.5, LatencyFactor: 3,
		LatencyFloor: 50 * time.Millisecond, BaseEjection: 30 * time.Second, MaxEjection: 5 * time.Minute}
}

func sum(rounds, failures int, p90 time.Duration) Summary {
	return Summary{Rounds: rounds, Failures: failures, P90: p90}
}

func TestJudge(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name      string
		summaries []Summary
		want      []Verdict
	}{
		{"two backends, one failing", []Summary{sum(20, 20, ms), sum(20, 0, ms)},
			[]Verdict{{Outlier: true, Reason: ReasonFailure, Value: 1, PeerMedian: 0}, {}}},
		{"failure gap not exceeded", []Summary{sum(20, 10, ms), sum(20, 0, ms)}, []Verdict{{}, {}}},
		{"just past the gap", []Summary{sum(20, 11, ms), sum(20, 0, ms)},
			[]Verdict{{Outlier: true, Reason: ReasonFailure, Value: 0.55, PeerMedian: 0}, {}}},
		{"one backend has no peers", []Summary{sum(100, 100, time.Second)}, []Verdict{{}}},
		{"a peer short of min_rounds does not count", []Summary{sum(20, 20, ms), sum(19, 0, ms)}, []Verdict{{}, {}}},
		{"short of min_rounds is not judged", []Summary{sum(19, 19, ms), sum(20, 0, ms), sum(20, 0, ms)}, []Verdict{{}, {}, {}}},
		{"all failing alike", []Summary{sum(20, 20, ms), sum(20, 20, ms), sum(20, 20, ms)}, []Verdict{{}, {}, {}}},
		{"slow among fast", []Summary{sum(20, 0, 2*ms), sum(20, 0, 160*ms), sum(20, 0, 2*ms), sum(20, 0, 4*ms)},
			[]Verdict{{}, {Outlier: true, Reason: ReasonLatency, Value: 0.16, PeerMedian: 0.002}, {}, {}}},
		{"slow but under the floor", []Summary{sum(20, 0, ms), sum(20, 0, 40*ms), sum(20, 0, ms)}, []Verdict{{}, {}, {}}},
		{"over the floor but within the factor", []Summary{sum(20, 0, 60*ms), sum(20, 0, 170*ms), sum(20, 0, 60*ms)}, []Verdict{{}, {}, {}}},
		{"median of an even number of peers", []Summary{sum(20, 0, 10*ms), sum(20, 0, 30*ms), sum(20, 0, 200*ms), sum(20, 0, 100*ms), sum(20, 0, 50*ms)},
			// Peers of the 200ms one: 10, 30, 50, 100: median 40ms.
			[]Verdict{{}, {}, {Outlier: true, Reason: ReasonLatency, Value: 0.2, PeerMedian: 0.04}, {}, {}}},
		{"failure wins over latency", []Summary{sum(20, 20, time.Second), sum(20, 0, ms)},
			[]Verdict{{Outlier: true, Reason: ReasonFailure, Value: 1, PeerMedian: 0}, {}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var j Judge
			out := make([]Verdict, len(c.summaries))
			j.Run(c.summaries, testSettings(), out)
			for i := range out {
				if !close(out[i], c.want[i]) {
					t.Errorf("backend %d: %+v; want %+v", i, out[i], c.want[i])
				}
			}
		})
	}
}

func close(a, b Verdict) bool {
	near := func(x, y float64) bool { return x-y < 1e-9 && y-x < 1e-9 }
	return a.Outlier == b.Outlier && a.Reason == b.Reason && near(a.Value, b.Value) && near(a.PeerMedian, b.PeerMedian)
}

func TestJudgeAllocatesNothingOnceSized(t *testing.T) {
	var j Judge
	summaries := []Summary{sum(20, 0, time.Millisecond), sum(20, 20, time.Millisecond), sum(20, 0, time.Second)}
	out := make([]Verdict, len(summaries))
	j.Run(summaries, testSettings(), out)
	if n := testing.AllocsPerRun(100, func() { j.Run(summaries, testSettings(), out) }); n != 0 {
		t.Errorf("%v allocations per judgement; want 0", n)
	}
}

func TestStatsWindow(t *testing.T) {
	var s Stats
	w := 30 * time.Second
	for i := range 20 {
		s.Record(epoch.Add(time.Duration(i)*time.Second), w, i%4 == 0, time.Millisecond)
	}
	got := s.Summary(epoch.Add(19*time.Second), w)
	if got.Rounds != 20 || got.Failures != 5 {
		t.Errorf("summary %+v; want 20 rounds, 5 failures", got)
	}
	if got.P90 < time.Millisecond || got.P90 > 1415*time.Microsecond {
		t.Errorf("p90 %v of 1ms rounds; want within one bin above 1ms", got.P90)
	}
	// At 34 s the window starts at 4 s: the rounds of 0-4 s have left
	// it, give or take a bucket of 3 s.
	later := s.Summary(epoch.Add(34*time.Second), w)
	if later.Rounds < 13 || later.Rounds > 16 {
		t.Errorf("at 34s: %+v; want the last 15 or so rounds", later)
	}
	if gone := s.Summary(epoch.Add(time.Hour), w); gone.Rounds != 0 || gone.P90 != 0 {
		t.Errorf("an hour later: %+v; want nothing", gone)
	}
	// A clock that went back starts afresh rather than waiting.
	s.Record(epoch.Add(-time.Hour), w, true, time.Second)
	if back := s.Summary(epoch.Add(-time.Hour), w); back.Rounds != 1 || back.Failures != 1 {
		t.Errorf("after the clock went back: %+v; want the one new round", back)
	}
}

func TestStatsP90(t *testing.T) {
	var s Stats
	w := time.Minute
	for i := range 100 {
		d := 2 * time.Millisecond
		if i >= 89 {
			d = 150 * time.Millisecond
		}
		s.Record(epoch, w, false, d)
	}
	if p90 := s.Summary(epoch, w).P90; p90 < 150*time.Millisecond || p90 > 213*time.Millisecond {
		t.Errorf("p90 %v with 11%% of rounds at 150ms; want the bin above 150ms", p90)
	}
	s = Stats{}
	for i := range 100 {
		d := 2 * time.Millisecond
		if i >= 90 {
			d = 150 * time.Millisecond
		}
		s.Record(epoch, w, false, d)
	}
	if p90 := s.Summary(epoch, w).P90; p90 < 2*time.Millisecond || p90 > 2829*time.Microsecond {
		t.Errorf("p90 %v with 10%% of rounds at 150ms; want the bin above 2ms", p90)
	}
}

func TestStatsRecordAllocatesNothing(t *testing.T) {
	var s Stats
	now := epoch
	if n := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		s.Record(now, time.Second, false, 3*time.Millisecond)
	}); n != 0 {
		t.Errorf("%v allocations per record; want 0", n)
	}
}

func TestEjectionBackOff(t *testing.T) {
	s := testSettings()
	var e Ejection
	now := epoch
	for i, want := range []time.Duration{30 * time.Second, time.Minute, 90 * time.Second} {
		if d := e.Eject(now, ReasonLatency, s); d != want {
			t.Fatalf("ejection %d lasts %v; want %v", i+1, d, want)
		}
		if e.Over(now.Add(want-time.Nanosecond)) || !e.Over(now.Add(want)) {
			t.Fatalf("ejection %d not over exactly after %v", i+1, want)
		}
		now = now.Add(want)
		e.Readmit(now)
	}
	// Less than a clean window: the multiplier stays at 3, so 4 x 30s.
	if d := e.Eject(now.Add(29*time.Second), ReasonFailure, s); d != 2*time.Minute {
		t.Fatalf("fourth ejection lasts %v; want 2m", d)
	}
	now = now.Add(29*time.Second + 2*time.Minute)
	e.Readmit(now)
	// Two clean windows halve 4 twice: 1, so the next is 2 x 30s.
	if d := e.Eject(now.Add(60*time.Second), ReasonFailure, s); d != time.Minute {
		t.Fatalf("after two clean windows: %v; want 1m", d)
	}
	// The cap holds however many ejections there were.
	for range 100 {
		e.Readmit(e.Until)
		if d := e.Eject(e.Until, ReasonFailure, s); d > s.MaxEjection {
			t.Fatalf("ejection of %v past the cap %v", d, s.MaxEjection)
		}
	}
	if d := e.Until.Sub(e.Since); d != s.MaxEjection {
		t.Errorf("after 100 ejections in a row: %v; want the cap %v", d, s.MaxEjection)
	}
}

package probe

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// syntheticEpoch is the synthetic start of the pure schedule tests.
var syntheticEpoch = time.Unix(1_000_000, 0)

func scheduledBackend(name string, interval time.Duration) *pool.Backend {
	return &pool.Backend{Name: name, URL: "http://127.0.0.1:1", Probe: config.HealthProbe{
		Enabled: true, Path: "/healthz", Interval: model.Duration(interval),
		Timeout: model.Duration(interval), Failures: 3, Successes: 2,
	}}
}

func fixedPhase(phase time.Duration) func(time.Duration) time.Duration {
	return func(time.Duration) time.Duration { return phase }
}

// popAt pops what is due at `at` and returns the backends' names.
func popAt(s *schedule, at time.Time) ([]string, []probeJob) {
	jobs := s.popDue(at, nil)
	names := make([]string, len(jobs))
	for i, j := range jobs {
		names[i] = j.target.backend.Name
	}
	return names, jobs
}

func TestScheduleFirstProbeWithinMinOfIntervalAndOneSecond(t *testing.T) {
	for _, interval := range []time.Duration{100 * time.Millisecond, time.Second, 5 * time.Second, time.Minute} {
		window := min(interval, time.Second)
		for _, phase := range []time.Duration{0, 1, window - 1, window, interval / 2, interval - 1} {
			s := newSchedule(syntheticEpoch, fixedPhase(phase))
			s.add(scheduledBackend("b", interval), syntheticEpoch)
			first, ok := s.next()
			if !ok || first.Before(syntheticEpoch) || first.Sub(syntheticEpoch) >= window {
				t.Fatalf("interval %v phase %v: first probe at +%v, want within [0, %v)", interval, phase, first.Sub(syntheticEpoch), window)
			}
			prev := first
			for i := range 4 {
				names, jobs := popAt(s, prev)
				if len(names) != 1 {
					t.Fatalf("interval %v phase %v probe %d: due %v popped %v", interval, phase, i, prev, names)
				}
				next, ok := s.finish(jobs[0].entry, prev.Add(time.Millisecond))
				if !ok {
					t.Fatal("the entry was not rescheduled")
				}
				gap := next.Sub(prev)
				if gap < window || gap > interval {
					t.Fatalf("interval %v phase %v: probe %d follows the last after %v, want between %v and %v", interval, phase, i+1, gap, window, interval)
				}
				if i > 0 && gap != interval {
					t.Fatalf("interval %v phase %v: steady probes %v apart, want %v", interval, phase, gap, interval)
				}
				if offset := next.Sub(syntheticEpoch) - phase; offset%interval != 0 {
					t.Fatalf("interval %v phase %v: probe at +%v is off the backend's phase grid", interval, phase, next.Sub(syntheticEpoch))
				}
				prev = next
			}
		}
	}
}

// TestScheduleSpreadsBackendsOverTheInterval runs 1,000 backends with a 1s
// interval on the default random phase through three simulated seconds.
func TestScheduleSpreadsBackendsOverTheInterval(t *testing.T) {
	const n = 1000
	s := newSchedule(syntheticEpoch, randomPhase)
	for i := range n {
		s.add(scheduledBackend("b"+strconv.Itoa(i), time.Second), syntheticEpoch)
	}
	var firstSecond int
	var buckets [10]int
	// Each slot of the steady second should fire about perSlot probes.
	const perSlot = int(n * probeSlot / time.Second)
	slots := make([]int, time.Second/probeSlot)
	for step := time.Duration(0); step < 3*time.Second; step += probeSlot {
		now := syntheticEpoch.Add(step)
		_, jobs := popAt(s, now)
		for _, j := range jobs {
			if j.due < time.Second {
				firstSecond++
			}
			if step >= 2*time.Second {
				buckets[(step-2*time.Second)/(100*time.Millisecond)]++
				slots[(step-2*time.Second)/probeSlot]++
			}
			s.finish(j.entry, now)
		}
	}
	if firstSecond != n {
		t.Errorf("%d of %d backends were probed in the first second", firstSecond, n)
	}
	for i, c := range buckets {
		// 100 expected per tenth of the interval; 5 standard deviations.
		if c < 50 || c > 150 {
			t.Errorf("%d probes in tenth %d of the steady interval, want about 100 (all tenths: %v)", c, i, buckets)
		}
	}
	for i, c := range slots {
		if c > 4*perSlot {
			t.Errorf("%d probes fired together in slot %d, want about %d", c, i, perSlot)
		}
	}
}

func TestScheduleNeverOverlapsProbesOfOneBackend(t *testing.T) {
	interval := 100 * time.Millisecond
	s := newSchedule(syntheticEpoch, fixedPhase(0))
	s.add(scheduledBackend("b", interval), syntheticEpoch)
	names, jobs := popAt(s, syntheticEpoch)
	if len(names) != 1 {
		t.Fatalf("popped %v at start, want b", names)
	}
	// The probe hangs for 3.5 intervals: nothing is due meanwhile.
	for at := time.Duration(0); at <= 350*time.Millisecond; at += 10 * time.Millisecond {
		if names, _ := popAt(s, syntheticEpoch.Add(at)); len(names) != 0 {
			t.Fatalf("popped %v at +%v while the backend's probe is in flight", names, at)
		}
	}
	next, _ := s.finish(jobs[0].entry, syntheticEpoch.Add(350*time.Millisecond))
	if want := syntheticEpoch.Add(400 * time.Millisecond); !next.Equal(want) {
		t.Fatalf("after overrunning, the next probe is at +%v, want the next grid point +400ms (missed ones skipped)", next.Sub(syntheticEpoch))
	}
}

func TestScheduleSync(t *testing.T) {
	s := newSchedule(syntheticEpoch, fixedPhase(0))
	a, b, c := scheduledBackend("a", time.Second), scheduledBackend("b", time.Second), scheduledBackend("c", time.Second)
	b.Probe.Enabled = false
	if added, removed := s.sync([]*pool.Backend{a, b, c}, syntheticEpoch); added != 2 || removed != 0 || s.len() != 2 {
		t.Fatalf("added %d removed %d scheduled %d, want 2 0 2 (b has probing disabled)", added, removed, s.len())
	}
	if _, ok := s.entries["b"]; ok {
		t.Fatal("the backend with probing disabled is scheduled")
	}
	entryC := s.entries["c"]
	dueC := entryC.due

	// A reload keeps c's identity but builds a new object (its client
	// changed): c keeps its place in the schedule. (Closing the old
	// object's connections is the pool's business, not the schedule's.)
	c2 := scheduledBackend("c", time.Second)
	d := scheduledBackend("d", time.Second)
	later := syntheticEpoch.Add(300 * time.Millisecond)
	if added, removed := s.sync([]*pool.Backend{a, c2, d}, later); added != 1 || removed != 0 {
		t.Fatalf("added %d removed %d, want 1 0", added, removed)
	}
	if s.entries["c"] != entryC || entryC.due != dueC || entryC.target.backend != c2 {
		t.Fatal("c lost its schedule or still probes the old object")
	}
	if s.entries["a"].target.backend != a {
		t.Fatal("a's entry changed")
	}
	if first := s.entries["d"].due; first < s.offset(later) || first >= s.offset(later)+time.Second {
		t.Fatalf("d added at +300ms is first due at +%v", first)
	}

	// a's probe is in flight when a is removed: it is not rescheduled.
	_, jobs := popAt(s, syntheticEpoch)
	var jobA *probeEntry
	for _, j := range jobs {
		if j.target.backend == a {
			jobA = j.entry
		}
	}
	if jobA == nil {
		t.Fatal("a was not due at its phase 0")
	}
	// c changes its URL: a new backend, probed afresh.
	c3 := scheduledBackend("c", time.Second)
	c3.URL = "http://127.0.0.1:2"
	if added, removed := s.sync([]*pool.Backend{c3}, later); added != 1 || removed != 3 {
		t.Fatalf("added %d removed %d, want 1 (c anew) and 3 (a, d, old c)", added, removed)
	}
	if _, ok := s.finish(jobA, later); ok {
		t.Fatal("a removed while in flight was rescheduled")
	}
	if s.len() != 1 {
		t.Fatalf("schedule holds %d entries, want only the new c", s.len())
	}
	// Removed entries may linger in the queue but never come out of it.
	for at := later; at.Before(later.Add(3 * time.Second)); at = at.Add(probeSlot) {
		_, jobs := popAt(s, at)
		for _, j := range jobs {
			if j.target.backend != c3 {
				t.Fatalf("at +%v a removed backend %s (%s) is due", at.Sub(syntheticEpoch), j.target.backend.Name, j.target.backend.URL)
			}
			s.finish(j.entry, at)
		}
	}
}

// TestScheduleHeapOrder drives many backends with random intervals and
// phases through simulated time and checks every probe fires exactly on
// its grid, in order, and that nothing due is ever left behind.
func TestScheduleHeapOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := newSchedule(syntheticEpoch, func(interval time.Duration) time.Duration { return time.Duration(rng.Int64N(int64(interval))) })
	intervals := []time.Duration{30 * time.Millisecond, 70 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond}
	expect := map[*probeEntry]time.Duration{}
	for i := range 300 {
		s.add(scheduledBackend("b"+strconv.Itoa(i), intervals[i%len(intervals)]), syntheticEpoch)
	}
	for _, e := range s.entries {
		expect[e] = e.due
	}
	var inFlight []probeJob
	for step := time.Duration(0); step < 2*time.Second; step += time.Duration(1+rng.IntN(7)) * time.Millisecond {
		now := syntheticEpoch.Add(step)
		// Finish a random part of what is in flight.
		kept := inFlight[:0]
		for _, j := range inFlight {
			if rng.IntN(2) == 0 {
				kept = append(kept, j)
				continue
			}
			next, _ := s.finish(j.entry, now)
			expect[j.entry] = next.Sub(syntheticEpoch)
		}
		inFlight = kept
		_, jobs := popAt(s, now)
		last := time.Duration(-1 << 62)
		for _, j := range jobs {
			if j.due > step || j.due < last || j.due != expect[j.entry] {
				t.Fatalf("at +%v popped due +%v (previous +%v, expected +%v)", step, j.due, last, expect[j.entry])
			}
			last = j.due
		}
		inFlight = append(inFlight, jobs...)
		if next, ok := s.next(); ok && !next.After(now) {
			t.Fatalf("at +%v an entry due +%v was left in the queue", step, next.Sub(syntheticEpoch))
		}
		for i, q := range s.queue {
			if q.due != q.entry.due {
				t.Fatalf("queue position %d holds due +%v for an entry due +%v", i, q.due, q.entry.due)
			}
			if parent := (i - 1) / 2; i > 0 && s.queue[parent].due > q.due {
				t.Fatalf("queue position %d is due before its parent", i)
			}
		}
	}
}

// TestScheduleSlotShortensWithTheProbeRate: the dispatcher's slot is
// probeSlot while it gathers at most probesPerSlot probes, shorter where
// backends are many so that a slot gathers about that many, never below
// minProbeSlot, and it lengthens again as backends go.
func TestScheduleSlotShortensWithTheProbeRate(t *testing.T) {
	s := newSchedule(syntheticEpoch, randomPhase)
	s.newFunc = func(*pool.Backend) (built, error) { return built{}, nil }
	if got := s.slot(); got != probeSlot {
		t.Errorf("empty schedule: slot %v, want %v", got, probeSlot)
	}
	var backends []*pool.Backend
	steps := []struct {
		backends int
		interval time.Duration
		want     time.Duration
	}{
		{1000, time.Second, probeSlot},
		{5000, time.Second, probeSlot},
		// 10,000 more every 10s add 1,000 probes per second: 6,000 in all.
		{15000, 10 * time.Second, probesPerSlot * time.Second / 6000},
		{20000, time.Second, probesPerSlot * time.Second / 11000},
		{40000, time.Second, minProbeSlot},
	}
	for _, step := range steps {
		for i := len(backends); i < step.backends; i++ {
			backends = append(backends, scheduledBackend("b"+strconv.Itoa(i), step.interval))
		}
		s.sync(backends, syntheticEpoch)
		if got := s.slot(); got < step.want-time.Microsecond || got > step.want+time.Microsecond {
			t.Errorf("%d backends: slot %v, want %v", step.backends, got, step.want)
		}
	}
	for _, step := range slices.Backward(steps) {
		s.sync(backends[:step.backends], syntheticEpoch)
		if got := s.slot(); got < step.want-time.Microsecond || got > step.want+time.Microsecond {
			t.Errorf("back to %d backends: slot %v, want %v", step.backends, got, step.want)
		}
	}
	s.sync(nil, syntheticEpoch)
	if got := s.slot(); got != probeSlot {
		t.Errorf("every backend gone: slot %v, want %v", got, probeSlot)
	}
}

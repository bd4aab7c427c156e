package collector

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/config"
)

// schedTestEpoch is the synthetic start of the pure schedule tests.
var schedTestEpoch = time.Unix(1_000_000, 0)

func schedTestBackend(name string, interval time.Duration) *Backend {
	return &Backend{Name: name, URL: "http://127.0.0.1:1", Probe: config.HealthProbe{
		Enabled: true, Path: "/healthz", Interval: model.Duration(interval),
		Timeout: model.Duration(interval), Failures: 3, Successes: 2,
	}}
}

func schedTestFixedPhase(phase time.Duration) func(time.Duration) time.Duration {
	return func(time.Duration) time.Duration { return phase }
}

// schedTestPopAt pops what is due at `at` and returns the backends' names.
func schedTestPopAt(s *schedule, at time.Time) ([]string, []probeJob) {
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
			s := newSchedule(schedTestEpoch, schedTestFixedPhase(phase))
			s.add(schedTestBackend("b", interval), schedTestEpoch)
			first, ok := s.next()
			if !ok || first.Before(schedTestEpoch) || first.Sub(schedTestEpoch) >= window {
				t.Fatalf("interval %v phase %v: first probe at +%v, want within [0, %v)", interval, phase, first.Sub(schedTestEpoch), window)
			}
			prev := first
			for i := range 4 {
				names, jobs := schedTestPopAt(s, prev)
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
				if offset := next.Sub(schedTestEpoch) - phase; offset%interval != 0 {
					t.Fatalf("interval %v phase %v: probe at +%v is off the backend's phase grid", interval, phase, next.Sub(schedTestEpoch))
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
	s := newSchedule(schedTestEpoch, randomPhase)
	for i := range n {
		s.add(schedTestBackend("b"+strconv.Itoa(i), time.Second), schedTestEpoch)
	}
	var firstSecond int
	var buckets [10]int
	var slots [100]int
	for step := time.Duration(0); step < 3*time.Second; step += probeSlot {
		now := schedTestEpoch.Add(step)
		_, jobs := schedTestPopAt(s, now)
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
		if c > 40 {
			t.Errorf("%d probes fired together in slot %d, want about 10", c, i)
		}
	}
}

func TestScheduleNeverOverlapsProbesOfOneBackend(t *testing.T) {
	interval := 100 * time.Millisecond
	s := newSchedule(schedTestEpoch, schedTestFixedPhase(0))
	s.add(schedTestBackend("b", interval), schedTestEpoch)
	names, jobs := schedTestPopAt(s, schedTestEpoch)
	if len(names) != 1 {
		t.Fatalf("popped %v at start, want b", names)
	}
	// The probe hangs for 3.5 intervals: nothing is due meanwhile.
	for at := time.Duration(0); at <= 350*time.Millisecond; at += 10 * time.Millisecond {
		if names, _ := schedTestPopAt(s, schedTestEpoch.Add(at)); len(names) != 0 {
			t.Fatalf("popped %v at +%v while the backend's probe is in flight", names, at)
		}
	}
	next, _ := s.finish(jobs[0].entry, schedTestEpoch.Add(350*time.Millisecond))
	if want := schedTestEpoch.Add(400 * time.Millisecond); !next.Equal(want) {
		t.Fatalf("after overrunning, the next probe is at +%v, want the next grid point +400ms (missed ones skipped)", next.Sub(schedTestEpoch))
	}
}

func TestScheduleSync(t *testing.T) {
	s := newSchedule(schedTestEpoch, schedTestFixedPhase(0))
	a, b, c := schedTestBackend("a", time.Second), schedTestBackend("b", time.Second), schedTestBackend("c", time.Second)
	b.Probe.Enabled = false
	if added, removed, _ := s.sync([]*Backend{a, b, c}, schedTestEpoch); added != 2 || removed != 0 || s.len() != 2 {
		t.Fatalf("added %d removed %d scheduled %d, want 2 0 2 (b has probing disabled)", added, removed, s.len())
	}
	if _, ok := s.entries["b"]; ok {
		t.Fatal("the backend with probing disabled is scheduled")
	}
	entryC := s.entries["c"]
	dueC := entryC.due

	// A reload keeps c's identity but builds a new object (its client
	// changed): c keeps its place in the schedule.
	c2 := schedTestBackend("c", time.Second)
	d := schedTestBackend("d", time.Second)
	later := schedTestEpoch.Add(300 * time.Millisecond)
	if added, removed, retired := s.sync([]*Backend{a, c2, d}, later); added != 1 || removed != 0 || len(retired) != 1 || retired[0] != c {
		t.Fatalf("added %d removed %d retired %v, want 1 0 and the old c retired", added, removed, retired)
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
	_, jobs := schedTestPopAt(s, schedTestEpoch)
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
	c3 := schedTestBackend("c", time.Second)
	c3.URL = "http://127.0.0.1:2"
	if added, removed, _ := s.sync([]*Backend{c3}, later); added != 1 || removed != 3 {
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
		_, jobs := schedTestPopAt(s, at)
		for _, j := range jobs {
			if j.target.backend != c3 {
				t.Fatalf("at +%v a removed backend %s (%s) is due", at.Sub(schedTestEpoch), j.target.backend.Name, j.target.backend.URL)
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
	s := newSchedule(schedTestEpoch, func(interval time.Duration) time.Duration { return time.Duration(rng.Int64N(int64(interval))) })
	intervals := []time.Duration{30 * time.Millisecond, 70 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond}
	expect := map[*probeEntry]time.Duration{}
	for i := range 300 {
		s.add(schedTestBackend("b"+strconv.Itoa(i), intervals[i%len(intervals)]), schedTestEpoch)
	}
	for _, e := range s.entries {
		expect[e] = e.due
	}
	var inFlight []probeJob
	for step := time.Duration(0); step < 2*time.Second; step += time.Duration(1+rng.IntN(7)) * time.Millisecond {
		now := schedTestEpoch.Add(step)
		// Finish a random part of what is in flight.
		kept := inFlight[:0]
		for _, j := range inFlight {
			if rng.IntN(2) == 0 {
				kept = append(kept, j)
				continue
			}
			next, _ := s.finish(j.entry, now)
			expect[j.entry] = next.Sub(schedTestEpoch)
		}
		inFlight = kept
		_, jobs := schedTestPopAt(s, now)
		last := time.Duration(-1 << 62)
		for _, j := range jobs {
			if j.due > step || j.due < last || j.due != expect[j.entry] {
				t.Fatalf("at +%v popped due +%v (previous +%v, expected +%v)", step, j.due, last, expect[j.entry])
			}
			last = j.due
		}
		inFlight = append(inFlight, jobs...)
		if next, ok := s.next(); ok && !next.After(now) {
			t.Fatalf("at +%v an entry due +%v was left in the queue", step, next.Sub(schedTestEpoch))
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

// proberTestServer is one loopback server standing in for many backends,
// told apart by their probe paths. A path starting with /hang never
// answers; any other answers 200. It records when each path was requested.
type proberTestServer struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string][]time.Time
}

func proberTestServe(t *testing.T) *proberTestServer {
	t.Helper()
	s := &proberTestServer{hits: map[string][]time.Time{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path] = append(s.hits[r.URL.Path], time.Now())
		s.mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/hang") {
			<-r.Context().Done()
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *proberTestServer) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.hits[path])
}

func (s *proberTestServer) times(path string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.hits[path]...)
}

// proberTestBackend is a backend of the test server probed at path.
func proberTestBackend(srv *proberTestServer, name, path string, interval, timeout time.Duration) config.Backend {
	i, to := model.Duration(interval), model.Duration(timeout)
	return config.Backend{Name: name, URL: srv.URL, HealthProbe: config.HealthProbeOverride{Path: &path, Interval: &i, Timeout: &to}}
}

// proberTestRig runs a Prober over a pool until the test ends.
type proberTestRig struct {
	pool   *Pool
	prober *Prober
	cancel context.CancelFunc
	done   chan struct{}
}

func proberTestStart(t *testing.T, cfg *config.Config, observe func(Result), setup func(*Prober)) *proberTestRig {
	t.Helper()
	pool, err := NewPool(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	r := &proberTestRig{pool: pool, prober: NewProber(pool, log.NewNopLogger(), observe), done: make(chan struct{})}
	if setup != nil {
		setup(r.prober)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		defer close(r.done)
		r.prober.Run(ctx)
	}()
	t.Cleanup(func() {
		r.stop(t)
		for _, b := range pool.Backends() {
			b.Client.CloseIdleConnections()
		}
	})
	return r
}

// stop cancels Run and waits for it to return.
func (r *proberTestRig) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of its context ending")
	}
}

func (r *proberTestRig) backend(name string) *Backend {
	for _, b := range r.pool.Backends() {
		if b.Name == name {
			return b
		}
	}
	return nil
}

func TestProberProbesEachBackendOnItsInterval(t *testing.T) {
	srv := proberTestServe(t)
	var observed atomic.Int64
	rig := proberTestStart(t, testConfig(
		proberTestBackend(srv, "a", "/a", 100*time.Millisecond, 100*time.Millisecond),
		proberTestBackend(srv, "b", "/b", 100*time.Millisecond, 100*time.Millisecond),
		proberTestBackend(srv, "c", "/c", 200*time.Millisecond, 100*time.Millisecond),
	), func(Result) { observed.Add(1) }, nil)
	time.Sleep(1200 * time.Millisecond)
	rig.stop(t)

	for _, tc := range []struct {
		path     string
		min, max int
	}{{"/a", 7, 13}, {"/b", 7, 13}, {"/c", 3, 7}} {
		if n := srv.count(tc.path); n < tc.min || n > tc.max {
			t.Errorf("%s was probed %d times in 1.2s, want %d to %d", tc.path, n, tc.min, tc.max)
		}
	}
	var recorded uint64
	for _, b := range rig.pool.Backends() {
		s := b.Snapshot()
		recorded += s.Probes
		if s.Health.State != StateHealthy {
			t.Errorf("backend %s is %s after answering 200", b.Name, s.Health.State)
		}
	}
	if recorded != uint64(observed.Load()) || recorded == 0 {
		t.Errorf("backends recorded %d results, observe saw %d", recorded, observed.Load())
	}
}

func TestProberFirstProbeWithinOneSecond(t *testing.T) {
	srv := proberTestServe(t)
	var backends []config.Backend
	for i := range 20 {
		backends = append(backends, proberTestBackend(srv, "b"+strconv.Itoa(i), "/b"+strconv.Itoa(i), time.Minute, time.Second))
	}
	started := time.Now()
	proberTestStart(t, testConfig(backends...), nil, nil)
	time.Sleep(1500 * time.Millisecond)
	for i := range 20 {
		times := srv.times("/b" + strconv.Itoa(i))
		if len(times) == 0 {
			t.Fatalf("backend %d with a 1m interval was not probed in 1.5s", i)
		}
		if d := times[0].Sub(started); d > 1200*time.Millisecond {
			t.Errorf("backend %d was first probed %v after start, want within 1s", i, d)
		}
		// The second probe comes at the backend's phase in the interval,
		// at least 1s after the first.
		if len(times) > 1 && times[1].Sub(times[0]) < 900*time.Millisecond {
			t.Errorf("backend %d with a 1m interval was probed again %v after its first probe", i, times[1].Sub(times[0]))
		}
	}
}

// The probe timeout is longer than the interval here (config validation
// forbids it; the scheduler must not rely on that): probes that hang
// until their timeout must still never overlap.
func TestProberNeverProbesOneBackendTwiceAtOnce(t *testing.T) {
	srv := proberTestServe(t)
	var inFlight, most atomic.Int64
	var timeouts atomic.Int64
	rig := proberTestStart(t, testConfig(
		proberTestBackend(srv, "slow", "/hang", 50*time.Millisecond, 300*time.Millisecond),
	), func(r Result) {
		inFlight.Add(-1)
		if r.Reason == ReasonTimeout {
			timeouts.Add(1)
		}
	}, func(p *Prober) {
		p.onLag = func(time.Duration) {
			n := inFlight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
		}
	})
	time.Sleep(1500 * time.Millisecond)
	rig.stop(t)
	if m := most.Load(); m != 1 {
		t.Errorf("%d probes of one backend were in flight at once, want 1", m)
	}
	if n := srv.count("/hang"); n < 3 || n > 6 {
		t.Errorf("the backend hanging for 300ms with a 50ms interval got %d probes in 1.5s, want 3 to 6", n)
	}
	if timeouts.Load() < 3 {
		t.Errorf("%d probes timed out, want at least 3", timeouts.Load())
	}
}

func TestProberSlowBackendsDelayNoOther(t *testing.T) {
	srv := proberTestServe(t)
	backends := []config.Backend{proberTestBackend(srv, "fast", "/fast", 50*time.Millisecond, 50*time.Millisecond)}
	// More hanging backends than the prober keeps idle workers.
	for i := range 3 * minProbeWorkers {
		backends = append(backends, proberTestBackend(srv, "hang"+strconv.Itoa(i), "/hang"+strconv.Itoa(i), time.Second, time.Second))
	}
	proberTestStart(t, testConfig(backends...), nil, nil)
	// Let every hanging backend hold a worker, then count the fast one.
	time.Sleep(1100 * time.Millisecond)
	before := srv.count("/fast")
	time.Sleep(time.Second)
	if n := srv.count("/fast") - before; n < 12 {
		t.Errorf("the fast backend got %d probes in 1s next to %d hanging ones, want about 20", n, 3*minProbeWorkers)
	}
	if n := srv.count("/hang0"); n < 1 {
		t.Errorf("the hanging backend was probed %d times", n)
	}
}

func TestProberSyncAddsAndRemovesBackends(t *testing.T) {
	srv := proberTestServe(t)
	interval := 100 * time.Millisecond
	kept := []string{"k0", "k1", "k2", "k3", "k4"}
	var before []config.Backend
	for _, name := range kept {
		before = append(before, proberTestBackend(srv, name, "/"+name, interval, interval))
	}
	cfg := testConfig(append(before, proberTestBackend(srv, "gone", "/gone", interval, interval))...)
	rig := proberTestStart(t, cfg, nil, nil)
	time.Sleep(500 * time.Millisecond)

	keptObjects := map[string]*Backend{}
	for _, name := range kept {
		keptObjects[name] = rig.backend(name)
	}
	after := testConfig(append(before, proberTestBackend(srv, "new", "/new", interval, interval))...)
	if err := rig.pool.Apply(after); err != nil {
		t.Fatal(err)
	}
	synced := time.Now()
	rig.prober.Sync()
	time.Sleep(200 * time.Millisecond)
	goneCount := srv.count("/gone")
	time.Sleep(800 * time.Millisecond)

	if n := srv.count("/gone"); n != goneCount || n == 0 {
		t.Errorf("the removed backend went from %d to %d probes after it was removed", goneCount, n)
	}
	newTimes := srv.times("/new")
	if len(newTimes) < 5 {
		t.Errorf("the added backend got %d probes in 1s, want about 10", len(newTimes))
	} else if d := newTimes[0].Sub(synced); d > 200*time.Millisecond {
		t.Errorf("the added backend was first probed %v after Sync, want within its 100ms interval", d)
	}
	for _, name := range kept {
		if rig.backend(name) != keptObjects[name] {
			t.Fatalf("the pool replaced unchanged backend %s", name)
		}
		times := srv.times("/" + name)
		for i := 1; i < len(times); i++ {
			// A backend scheduled afresh at Sync would get an extra probe
			// at a random point of its interval.
			if gap := times[i].Sub(times[i-1]); gap < interval/2 {
				t.Errorf("unchanged backend %s was probed twice %v apart around the reload", name, gap)
			}
		}
		if len(times) < 10 {
			t.Errorf("unchanged backend %s got %d probes in 1.5s, want about 15", name, len(times))
		}
	}
}

func TestProberClosesConnectionsOfRemovedBackends(t *testing.T) {
	kept := probeTestServe(t, func(http.ResponseWriter, *http.Request) {})
	removed := probeTestServe(t, func(http.ResponseWriter, *http.Request) {})
	interval := model.Duration(50 * time.Millisecond)
	probe := config.HealthProbeOverride{Interval: &interval, Timeout: &interval}
	keptBackend := config.Backend{Name: "kept", URL: kept.URL, HealthProbe: probe}
	rig := proberTestStart(t, testConfig(keptBackend, config.Backend{Name: "removed", URL: removed.URL, HealthProbe: probe}), nil, nil)
	time.Sleep(300 * time.Millisecond)
	if removed.requests.Load() == 0 {
		t.Fatal("the backend to remove was never probed")
	}
	if err := rig.pool.Apply(testConfig(keptBackend)); err != nil {
		t.Fatal(err)
	}
	rig.prober.Sync()
	deadline := time.Now().Add(2 * time.Second)
	for removed.closed.Load() < removed.connections.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("%d of the removed backend's %d probe connections are still open 2s after Sync", removed.connections.Load()-removed.closed.Load(), removed.connections.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := kept.closed.Load(); n != 0 {
		t.Errorf("%d of the kept backend's connections were closed", n)
	}
}

// TestProberClosesConnectionOfBackendRemovedMidProbe: a backend removed by
// a reload while its probe is in flight has its connection closed when
// that probe ends, not kept idle until the idle timeout.
func TestProberClosesConnectionOfBackendRemovedMidProbe(t *testing.T) {
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	inFlight := make(chan struct{}, 1)
	removed := probeTestServe(t, func(http.ResponseWriter, *http.Request) {
		select {
		case inFlight <- struct{}{}:
		default:
		}
		<-release
	})
	interval := model.Duration(time.Second)
	probe := config.HealthProbeOverride{Interval: &interval, Timeout: &interval}
	rig := proberTestStart(t, testConfig(config.Backend{Name: "removed", URL: removed.URL, HealthProbe: probe}), nil, nil)
	select {
	case <-inFlight:
	case <-time.After(2 * time.Second):
		t.Fatal("the backend was not probed within 2s")
	}
	if err := rig.pool.Apply(testConfig()); err != nil {
		t.Fatal(err)
	}
	rig.prober.Sync()
	time.Sleep(50 * time.Millisecond)
	releaseOnce.Do(func() { close(release) })
	deadline := time.Now().Add(2 * time.Second)
	for removed.closed.Load() < removed.connections.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("the removed backend's connection is still open 2s after its in-flight probe ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestProberSkipsDisabledBackends(t *testing.T) {
	srv := proberTestServe(t)
	off := proberTestBackend(srv, "off", "/off", 50*time.Millisecond, 50*time.Millisecond)
	disabled := false
	off.HealthProbe.Enabled = &disabled
	rig := proberTestStart(t, testConfig(off, proberTestBackend(srv, "on", "/on", 50*time.Millisecond, 50*time.Millisecond)), nil, nil)
	time.Sleep(500 * time.Millisecond)
	if n := srv.count("/off"); n != 0 {
		t.Errorf("the backend with probing disabled got %d probes", n)
	}
	if n := srv.count("/on"); n < 4 {
		t.Errorf("the enabled backend got %d probes in 500ms", n)
	}
	if s := rig.backend("off").Snapshot(); s.Probes != 0 || s.Health.State != StateUnknown {
		t.Errorf("the unprobed backend recorded %d probes and is %s", s.Probes, s.Health.State)
	}
}

func TestProberRunCancelsProbesAndReturns(t *testing.T) {
	srv := proberTestServe(t)
	var backends []config.Backend
	for i := range 5 {
		backends = append(backends, proberTestBackend(srv, "h"+strconv.Itoa(i), "/hang"+strconv.Itoa(i), time.Minute, time.Minute))
	}
	rig := proberTestStart(t, testConfig(backends...), nil, nil)
	deadline := time.Now().Add(3 * time.Second)
	for i := 0; i < 5; {
		if srv.count("/hang"+strconv.Itoa(i)) == 1 {
			i++
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("backend %d was not probed within 3s", i)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopped := time.Now()
	rig.stop(t)
	if d := time.Since(stopped); d > time.Second {
		t.Errorf("Run took %v to return with probes hanging for a minute", d)
	}
	for _, b := range rig.pool.Backends() {
		if s := b.Snapshot(); s.Probes != 0 || s.Health.State != StateUnknown {
			t.Errorf("backend %s recorded %d results from probes cut short by shutdown; state %s", b.Name, s.Probes, s.Health.State)
		}
	}
}

func TestProberSurvivesPanickingObserver(t *testing.T) {
	srv := proberTestServe(t)
	var calls atomic.Int64
	proberTestStart(t, testConfig(proberTestBackend(srv, "a", "/a", 50*time.Millisecond, 50*time.Millisecond)),
		func(Result) {
			calls.Add(1)
			panic("observer bug")
		}, nil)
	time.Sleep(500 * time.Millisecond)
	if n := calls.Load(); n < 4 {
		t.Errorf("after panicking the observer was called %d times in 500ms; probing stopped", n)
	}
}

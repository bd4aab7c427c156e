package probe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// The Prober's timing is tested on synthetic time: in a synctest bubble,
// with probes that never touch the network (fakeProbes). A probe path
// starting with /hang never answers, so the probe lasts its timeout; one
// starting with /panic panics; any other answers 200 at once. In the
// bubble every duration is exact, so the tests check each probe against
// the backend's phase grid rather than count probes in real time.
//
// A few tests at the end run the Prober against real loopback servers, to
// prove the real probes, pool and prober together; they assert counts and
// states, never tight timings.

// fakeProbes stands in for the HTTP probes: it records when each backend
// was probed and how many of its probes were in flight at once.
type fakeProbes struct {
	mu       sync.Mutex
	starts   map[string][]time.Time
	inFlight map[string]int
	most     map[string]int
	// total and mostTotal count the probes in flight over all backends.
	total, mostTotal int
}

func newFakeProbes() *fakeProbes {
	return &fakeProbes{starts: map[string][]time.Time{}, inFlight: map[string]int{}, most: map[string]int{}}
}

// newFunc is the Prober's newFunc for fake probes.
func (f *fakeProbes) newFunc(b *pool.Backend) (built, error) {
	name, path := b.Name, b.Probe.Path
	return built{probe: func(ctx context.Context) health.Result {
		f.mu.Lock()
		f.starts[name] = append(f.starts[name], time.Now())
		f.inFlight[name]++
		f.most[name] = max(f.most[name], f.inFlight[name])
		f.total++
		f.mostTotal = max(f.mostTotal, f.total)
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			f.inFlight[name]--
			f.total--
			f.mu.Unlock()
		}()
		if strings.HasPrefix(path, "/panic") {
			panic("probe bug")
		}
		if strings.HasPrefix(path, "/hang") {
			<-ctx.Done()
			return health.TimeoutResult("no answer within the probe timeout")
		}
		return health.StatusResult(http.StatusOK)
	}}, nil
}

func (f *fakeProbes) startsOf(name string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.starts[name]...)
}

func (f *fakeProbes) mostInFlight(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.most[name]
}

// fakeBackend is a backend probed at path.
func fakeBackend(name, path string, interval, timeout time.Duration) config.Backend {
	probe := config.HealthProbe{Path: path, Interval: model.Duration(interval), Timeout: model.Duration(timeout)}
	return config.Backend{Name: name, URL: "http://" + name + ".invalid", HealthProbe: config.NewHealthProbeOverride(probe, "path", "interval", "timeout")}
}

// proberRig runs a Prober over a pool until stopped.
type proberRig struct {
	pool    *pool.Pool
	prober  *Prober
	probes  *fakeProbes
	started time.Time
	lags    []time.Duration
	lagMu   sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	// recorded is notified after each result a backend recorded.
	recorded signal
}

// startRig starts a Prober over the configuration's backends. With
// fake true its probes are fakeProbes (and the test must run in a synctest
// bubble and stop the rig before the bubble ends); otherwise they are the
// real HTTP probes and the rig stops when the test ends.
func startRig(t *testing.T, cfg *config.Config, fake bool, observe func(health.Result)) *proberRig {
	t.Helper()
	p := newPool(t, cfg)
	r := &proberRig{pool: p, done: make(chan struct{}), recorded: newSignal()}
	r.prober = NewProber(p, log.NewNopLogger(), func(res health.Result) {
		r.recorded.notify()
		if observe != nil {
			observe(res)
		}
	})
	r.prober.onLag = func(lag time.Duration) {
		r.lagMu.Lock()
		r.lags = append(r.lags, lag)
		r.lagMu.Unlock()
	}
	if fake {
		r.probes = newFakeProbes()
		r.prober.newFunc = r.probes.newFunc
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.started = time.Now()
	go func() {
		defer close(r.done)
		r.prober.Run(ctx)
	}()
	if !fake {
		t.Cleanup(func() { r.stop(t) })
	}
	return r
}

// stop cancels Run and waits for it to return.
func (r *proberRig) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of its context ending")
	}
}

func (r *proberRig) backend(name string) *pool.Backend {
	for _, b := range r.pool.Backends() {
		if b.Name == name {
			return b
		}
	}
	return nil
}

// checkLags checks every probe started within one slot of its due time.
func (r *proberRig) checkLags(t *testing.T) {
	t.Helper()
	r.lagMu.Lock()
	defer r.lagMu.Unlock()
	for _, lag := range r.lags {
		if lag < 0 || lag > probeSlot {
			t.Errorf("a probe started %v after its due time, want within [0, %v]", lag, probeSlot)
			return
		}
	}
}

// grid is when a backend added to the schedule at added is due, up to
// until: its first probe folded into min(interval, 1s) after added, then
// every point of its phase grid. It reads the backend's phase from the
// schedule.
func (r *proberRig) grid(t *testing.T, name string, added, until time.Time) []time.Time {
	t.Helper()
	r.prober.mu.Lock()
	e := r.prober.sched.entries[name]
	if e == nil {
		r.prober.mu.Unlock()
		t.Fatalf("backend %s is not scheduled", name)
	}
	anchor, interval := r.prober.sched.epoch.Add(e.anchor), e.interval
	r.prober.mu.Unlock()
	var dues []time.Time
	for due := added.Add(anchor.Sub(added) % min(interval, maxFirstProbeDelay)); !due.After(until); {
		dues = append(dues, due)
		if due.Before(anchor) {
			due = anchor
		} else {
			due = due.Add(interval)
		}
	}
	return dues
}

// checkOnGrid checks that a backend of instant probes, added at added,
// was probed once per point of its grid up to until, each probe within a
// slot of its point. A probe due in the last slot before until may not
// have started yet.
func (r *proberRig) checkOnGrid(t *testing.T, name string, added, until time.Time) {
	t.Helper()
	dues := r.grid(t, name, added, until)
	starts := r.probes.startsOf(name)
	want := 0
	for _, due := range dues {
		if due.Add(probeSlot).Before(until) {
			want++
		}
	}
	if len(starts) < want || len(starts) > len(dues) {
		t.Errorf("backend %s was probed %d times by +%v, want %d to %d (due at %v)",
			name, len(starts), until.Sub(r.started), want, len(dues), r.offsets(dues))
		return
	}
	for k, start := range starts {
		if start.Before(dues[k]) || start.After(dues[k].Add(probeSlot)) {
			t.Errorf("backend %s probe %d started at +%v, want within a slot of its due time +%v (all probes: %v)",
				name, k, start.Sub(r.started), dues[k].Sub(r.started), r.offsets(starts))
			return
		}
	}
}

func (r *proberRig) offsets(times []time.Time) []time.Duration {
	out := make([]time.Duration, len(times))
	for i, at := range times {
		out[i] = at.Sub(r.started)
	}
	return out
}

func TestProberProbesEachBackendOnItsInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var observed atomic.Int64
		rig := startRig(t, newConfig(
			fakeBackend("a", "/a", 100*time.Millisecond, 100*time.Millisecond),
			fakeBackend("b", "/b", 100*time.Millisecond, 100*time.Millisecond),
			fakeBackend("c", "/c", 200*time.Millisecond, 100*time.Millisecond),
		), true, func(health.Result) { observed.Add(1) })
		time.Sleep(1200 * time.Millisecond)
		rig.stop(t)
		end := time.Now()

		for _, name := range []string{"a", "b", "c"} {
			rig.checkOnGrid(t, name, rig.started, end)
		}
		// 1.2s of a 100ms interval is 12 probes, of 200ms 6, whatever the
		// phase (give or take the one due in the very last slot).
		for _, tc := range []struct {
			name     string
			min, max int
		}{{"a", 11, 13}, {"b", 11, 13}, {"c", 5, 7}} {
			if n := len(rig.probes.startsOf(tc.name)); n < tc.min || n > tc.max {
				t.Errorf("%s was probed %d times in 1.2s, want %d to %d", tc.name, n, tc.min, tc.max)
			}
		}
		rig.checkLags(t)
		var recorded uint64
		for _, b := range rig.pool.Backends() {
			s := b.Snapshot()
			recorded += s.Probes
			if s.Health.State != health.StateHealthy {
				t.Errorf("backend %s is %s after answering 200", b.Name, s.Health.State)
			}
		}
		if recorded != uint64(observed.Load()) || recorded == 0 {
			t.Errorf("backends recorded %d results, observe saw %d", recorded, observed.Load())
		}
	})
}

func TestProberFirstProbeWithinOneSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var backends []config.Backend
		for i := range 20 {
			backends = append(backends, fakeBackend("b"+strconv.Itoa(i), "/b"+strconv.Itoa(i), time.Minute, time.Second))
		}
		rig := startRig(t, newConfig(backends...), true, nil)
		// Two and a half intervals: the folded first probe, the first
		// grid point and the next two.
		time.Sleep(150 * time.Second)
		rig.stop(t)
		end := time.Now()
		for i := range 20 {
			name := "b" + strconv.Itoa(i)
			starts := rig.probes.startsOf(name)
			if len(starts) == 0 {
				t.Fatalf("backend %s with a 1m interval was never probed", name)
			}
			if d := starts[0].Sub(rig.started); d >= time.Second+probeSlot {
				t.Errorf("backend %s was first probed %v after start, want within 1s", name, d)
			}
			// The second probe comes at the backend's phase in the
			// interval, at least 1s after the first.
			if len(starts) > 1 && starts[1].Sub(starts[0]) < time.Second-probeSlot {
				t.Errorf("backend %s with a 1m interval was probed again %v after its first probe", name, starts[1].Sub(starts[0]))
			}
			rig.checkOnGrid(t, name, rig.started, end)
		}
		rig.checkLags(t)
	})
}

// The probe timeout is longer than the interval here (config validation
// forbids it; the scheduler must not rely on that): probes that hang
// until their timeout must still never overlap.
func TestProberNeverProbesOneBackendTwiceAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		interval, timeout := 50*time.Millisecond, 300*time.Millisecond
		var mu sync.Mutex
		var results []health.Result
		rig := startRig(t, newConfig(fakeBackend("slow", "/hang", interval, timeout)), true, func(r health.Result) {
			mu.Lock()
			results = append(results, r)
			mu.Unlock()
		})
		time.Sleep(1500 * time.Millisecond)
		rig.stop(t)

		if m := rig.probes.mostInFlight("slow"); m != 1 {
			t.Errorf("%d probes of one backend were in flight at once, want 1", m)
		}
		starts := rig.probes.startsOf("slow")
		// Each probe lasts the 300ms timeout; the next starts at the first
		// grid point after it ended: 4 or 5 probes in 1.5s.
		if n := len(starts); n < 4 || n > 5 {
			t.Errorf("the backend hanging for 300ms with a 50ms interval got %d probes in 1.5s, want 4 or 5", n)
		}
		for k := 1; k < len(starts); k++ {
			if gap := starts[k].Sub(starts[k-1]); gap < timeout || gap > timeout+interval+probeSlot {
				t.Errorf("probes %d and %d started %v apart, want from the %v timeout to one interval and slot more", k-1, k, gap, timeout)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		// Every probe but the one cut short by the stop timed out, after
		// exactly its timeout on the probe's clock.
		if len(results) < len(starts)-1 || len(results) < 3 {
			t.Errorf("%d results for %d probes", len(results), len(starts))
		}
		for _, r := range results {
			if r.Reason != health.ReasonTimeout || r.Duration != timeout {
				t.Errorf("got %+v, want a timeout after exactly %v", r, timeout)
			}
		}
	})
}

func TestProberRecordsTimeAndDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var results []health.Result
		rig := startRig(t, newConfig(fakeBackend("hang", "/hang", time.Second, 250*time.Millisecond)), true, func(r health.Result) {
			mu.Lock()
			results = append(results, r)
			mu.Unlock()
		})
		time.Sleep(2500 * time.Millisecond)
		rig.stop(t)
		starts := rig.probes.startsOf("hang")
		mu.Lock()
		defer mu.Unlock()
		if len(results) < 2 || len(results) > len(starts) {
			t.Fatalf("%d results for %d probes", len(results), len(starts))
		}
		for i, r := range results {
			if !r.Time.Equal(starts[i]) || r.Duration != 250*time.Millisecond {
				t.Errorf("result %d: time +%v duration %v, want the probe's start +%v and its 250ms", i, r.Time.Sub(rig.started), r.Duration, starts[i].Sub(rig.started))
			}
		}
		if s := rig.backend("hang").Snapshot(); s.LastProbe == nil || !s.LastProbe.Time.Equal(results[len(results)-1].Time) {
			t.Errorf("the backend's last probe is %+v, want the last result", s.LastProbe)
		}
	})
}

func TestProberSlowBackendsDelayNoOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		backends := []config.Backend{fakeBackend("fast", "/fast", 50*time.Millisecond, 50*time.Millisecond)}
		// More hanging backends than the prober keeps idle workers, each
		// first probed within the first second and hanging until after
		// the test ends, so that from 1s on every one holds a worker.
		hanging := 3 * minProbeWorkers
		for i := range hanging {
			backends = append(backends, fakeBackend("hang"+strconv.Itoa(i), "/hang"+strconv.Itoa(i), time.Second, 5*time.Second))
		}
		rig := startRig(t, newConfig(backends...), true, nil)
		time.Sleep(2100 * time.Millisecond)
		rig.stop(t)
		end := time.Now()

		rig.probes.mu.Lock()
		most := rig.probes.mostTotal
		rig.probes.mu.Unlock()
		if most < hanging+1 {
			t.Errorf("at most %d probes were in flight at once, want every hanging one and the fast one (%d)", most, hanging+1)
		}
		// Every probe of the fast backend started on time, hanging
		// backends or not: 42 in 2.1s.
		rig.checkOnGrid(t, "fast", rig.started, end)
		for i := range hanging {
			if n := len(rig.probes.startsOf("hang" + strconv.Itoa(i))); n != 1 {
				t.Errorf("hanging backend %d was probed %d times, want once", i, n)
			}
		}
		rig.checkLags(t)
	})
}

func TestProberSyncAddsAndRemovesBackends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		interval := 100 * time.Millisecond
		kept := []string{"k0", "k1", "k2", "k3", "k4"}
		var before []config.Backend
		for _, name := range kept {
			before = append(before, fakeBackend(name, "/"+name, interval, interval))
		}
		rig := startRig(t, newConfig(append(before, fakeBackend("gone", "/gone", interval, interval))...), true, nil)
		time.Sleep(500 * time.Millisecond)

		keptObjects := map[string]*pool.Backend{}
		for _, name := range kept {
			keptObjects[name] = rig.backend(name)
		}
		applyConfig(t, rig.pool, newConfig(append(before, fakeBackend("new", "/new", interval, interval))...))
		synced := time.Now()
		rig.prober.Sync()
		// Let the prober apply the sync before counting: no time passes.
		synctest.Wait()
		goneCount := len(rig.probes.startsOf("gone"))
		time.Sleep(time.Second)
		rig.stop(t)
		end := time.Now()

		if n := len(rig.probes.startsOf("gone")); n != goneCount || n < 4 {
			t.Errorf("the removed backend went from %d to %d probes after it was removed", goneCount, n)
		}
		// The added backend is first probed within its interval of the
		// sync, then on its grid: 10 probes in 1s.
		rig.checkOnGrid(t, "new", synced, end)
		if n := len(rig.probes.startsOf("new")); n < 9 {
			t.Errorf("the added backend got %d probes in 1s, want about 10", n)
		}
		for _, name := range kept {
			if rig.backend(name) != keptObjects[name] {
				t.Fatalf("the pool replaced unchanged backend %s", name)
			}
			// A backend scheduled afresh at Sync would get an extra probe
			// at a random point of its interval: the unchanged ones stay
			// on the grid they had from the start, 15 probes in 1.5s.
			rig.checkOnGrid(t, name, rig.started, end)
			if n := len(rig.probes.startsOf(name)); n < 14 {
				t.Errorf("unchanged backend %s got %d probes in 1.5s, want about 15", name, n)
			}
		}
		rig.checkLags(t)
	})
}

func TestProberSkipsDisabledBackends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		off := fakeBackend("off", "/off", 50*time.Millisecond, 50*time.Millisecond)
		off.HealthProbe.Values.Enabled = false
		off.HealthProbe.Set("enabled")
		rig := startRig(t, newConfig(off, fakeBackend("on", "/on", 50*time.Millisecond, 50*time.Millisecond)), true, nil)
		time.Sleep(500 * time.Millisecond)
		rig.stop(t)
		if n := len(rig.probes.startsOf("off")); n != 0 {
			t.Errorf("the backend with probing disabled got %d probes", n)
		}
		rig.checkOnGrid(t, "on", rig.started, time.Now())
		if n := len(rig.probes.startsOf("on")); n < 9 {
			t.Errorf("the enabled backend got %d probes in 500ms, want about 10", n)
		}
		if s := rig.backend("off").Snapshot(); s.Probes != 0 || s.Health.State != health.StateUnknown {
			t.Errorf("the unprobed backend recorded %d probes and is %s", s.Probes, s.Health.State)
		}
	})
}

func TestProberRunCancelsProbesAndReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var backends []config.Backend
		for i := range 5 {
			backends = append(backends, fakeBackend("h"+strconv.Itoa(i), "/hang"+strconv.Itoa(i), time.Minute, time.Minute))
		}
		rig := startRig(t, newConfig(backends...), true, nil)
		time.Sleep(time.Second + probeSlot)
		for i := range 5 {
			if n := len(rig.probes.startsOf("h" + strconv.Itoa(i))); n != 1 {
				t.Fatalf("backend %d was probed %d times in its first second, want once", i, n)
			}
		}
		stopped := time.Now()
		rig.stop(t)
		// The probes hang for a minute; the stop cuts them short at once.
		if d := time.Since(stopped); d != 0 {
			t.Errorf("Run took %v to return with probes hanging for a minute", d)
		}
		for _, b := range rig.pool.Backends() {
			if s := b.Snapshot(); s.Probes != 0 || s.Health.State != health.StateUnknown {
				t.Errorf("backend %s recorded %d results from probes cut short by shutdown; state %s", b.Name, s.Probes, s.Health.State)
			}
		}
	})
}

func TestProberSurvivesPanickingObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		rig := startRig(t, newConfig(fakeBackend("a", "/a", 50*time.Millisecond, 50*time.Millisecond)), true,
			func(health.Result) {
				calls.Add(1)
				panic("observer bug")
			})
		// Stopped between two slots, so that no probe is cut short by the
		// stop (its result, dropped, would reach no observer).
		time.Sleep(500*time.Millisecond + probeSlot/2)
		rig.stop(t)
		rig.checkOnGrid(t, "a", rig.started, time.Now())
		if n, probes := calls.Load(), len(rig.probes.startsOf("a")); n != int64(probes) || n < 9 {
			t.Errorf("after panicking the observer was called %d times for %d probes in 500ms, want about 10", n, probes)
		}
	})
}

func TestProberSurvivesPanickingProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rig := startRig(t, newConfig(fakeBackend("a", "/panic", 50*time.Millisecond, 50*time.Millisecond)), true, nil)
		time.Sleep(500 * time.Millisecond)
		rig.stop(t)
		rig.checkOnGrid(t, "a", rig.started, time.Now())
		if n := len(rig.probes.startsOf("a")); n < 9 {
			t.Errorf("the panicking probe was called %d times in 500ms, want about 10: probing stopped", n)
		}
		if s := rig.backend("a").Snapshot(); s.Probes != 0 {
			t.Errorf("the backend recorded %d results of panicking probes", s.Probes)
		}
	})
}

// pathServer is one loopback server standing in for many backends,
// told apart by their probe paths. A path starting with /hang never
// answers; any other answers 200. It counts the requests of each path and
// notifies changed at each.
type pathServer struct {
	*httptest.Server
	mu      sync.Mutex
	hits    map[string]int
	changed signal
}

func startPathServer(t *testing.T) *pathServer {
	t.Helper()
	s := &pathServer{hits: map[string]int{}, changed: newSignal()}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		s.changed.notify()
		if strings.HasPrefix(r.URL.Path, "/hang") {
			<-r.Context().Done()
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *pathServer) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// pathBackend is a backend of the test server probed at path.
func pathBackend(srv *pathServer, name, path string, interval, timeout time.Duration) config.Backend {
	b := fakeBackend(name, path, interval, timeout)
	b.URL = srv.URL
	return b
}

// TestProberProbesRealBackends runs the Prober with its real HTTP probes
// against loopback servers: every backend is probed, its results land in
// its state machine and the observer, and a hanging one times out.
func TestProberProbesRealBackends(t *testing.T) {
	t.Parallel()
	srv := startPathServer(t)
	var observed atomic.Int64
	// The answering backends get a timeout no loaded machine reaches, so
	// that each of their results is one the server saw.
	cfg := newConfig(
		pathBackend(srv, "a", "/a", 50*time.Millisecond, 5*time.Second),
		pathBackend(srv, "b", "/b", 50*time.Millisecond, 5*time.Second),
		pathBackend(srv, "hang", "/hang", 50*time.Millisecond, 50*time.Millisecond),
	)
	rig := startRig(t, cfg, false, func(health.Result) { observed.Add(1) })
	await(t, "every backend settled", rig.recorded, func() bool {
		return rig.backend("a").Health().State == health.StateHealthy &&
			rig.backend("b").Health().State == health.StateHealthy &&
			rig.backend("hang").Health().State == health.StateUnhealthy
	})
	rig.stop(t)
	var recorded uint64
	for _, b := range rig.pool.Backends() {
		s := b.Snapshot()
		recorded += s.Probes
		if int(s.Probes) > srv.count(b.Probe.Path) {
			t.Errorf("backend %s recorded %d probes but the server saw %d", b.Name, s.Probes, srv.count(b.Probe.Path))
		}
	}
	if recorded != uint64(observed.Load()) {
		t.Errorf("backends recorded %d results, observe saw %d", recorded, observed.Load())
	}
	if s := rig.backend("hang").Snapshot(); s.LastProbe == nil || s.LastProbe.Reason != health.ReasonTimeout {
		t.Errorf("the hanging backend's last probe is %+v, want a timeout", s.LastProbe)
	}
}

func TestProberClosesConnectionsOfRemovedBackends(t *testing.T) {
	t.Parallel()
	kept := startServer(t, func(http.ResponseWriter, *http.Request) {})
	removed := startServer(t, func(http.ResponseWriter, *http.Request) {})
	interval := model.Duration(50 * time.Millisecond)
	probe := config.NewHealthProbeOverride(config.HealthProbe{Interval: interval, Timeout: interval}, "interval", "timeout")
	keptBackend := config.Backend{Name: "kept", URL: kept.URL, HealthProbe: probe}
	rig := startRig(t, newConfig(keptBackend, config.Backend{Name: "removed", URL: removed.URL, HealthProbe: probe}), false, nil)
	await(t, "both backends probed", rig.recorded, func() bool { return removed.requests.Load() > 0 && kept.requests.Load() > 0 })
	applyConfig(t, rig.pool, newConfig(keptBackend))
	rig.prober.Sync()
	await(t, "the removed backend's probe connections closed", removed.changed, func() bool {
		return removed.closed.Load() >= removed.connections.Load()
	})
	if n := kept.closed.Load(); n != 0 {
		t.Errorf("%d of the kept backend's connections were closed", n)
	}
}

// TestProberClosesConnectionOfBackendRemovedMidProbe: a backend removed by
// a reload while its probe is in flight does not keep its connection idle
// until the idle timeout.
func TestProberClosesConnectionOfBackendRemovedMidProbe(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	inFlight := make(chan struct{}, 1)
	removed := startServer(t, func(http.ResponseWriter, *http.Request) {
		select {
		case inFlight <- struct{}{}:
		default:
		}
		<-release
	})
	// A short interval for a first probe at once, a long timeout for one
	// that lasts until the backend is released.
	interval, timeout := model.Duration(50*time.Millisecond), model.Duration(time.Minute)
	probe := config.NewHealthProbeOverride(config.HealthProbe{Interval: interval, Timeout: timeout}, "interval", "timeout")
	rig := startRig(t, newConfig(config.Backend{Name: "removed", URL: removed.URL, HealthProbe: probe}), false, nil)
	select {
	case <-inFlight:
	case <-time.After(2 * time.Second):
		t.Fatal("the backend was not probed within 2s")
	}
	applyConfig(t, rig.pool, newConfig())
	rig.prober.Sync()
	releaseOnce.Do(func() { close(release) })
	await(t, "the removed backend's connection closed after its in-flight probe", removed.changed, func() bool {
		return removed.closed.Load() >= removed.connections.Load()
	})
}

func TestProberRunCancelsRealProbes(t *testing.T) {
	t.Parallel()
	srv := startPathServer(t)
	var backends []config.Backend
	for i := range 5 {
		// A short interval for a first probe at once; the probe hangs
		// for its minute, so there is no second.
		backends = append(backends, pathBackend(srv, "h"+strconv.Itoa(i), "/hang"+strconv.Itoa(i), 50*time.Millisecond, time.Minute))
	}
	rig := startRig(t, newConfig(backends...), false, nil)
	await(t, "every hanging backend probed", srv.changed, func() bool {
		for i := range 5 {
			if srv.count("/hang"+strconv.Itoa(i)) != 1 {
				return false
			}
		}
		return true
	})
	rig.stop(t) // fails unless Run returns within 5s
	for _, b := range rig.pool.Backends() {
		if s := b.Snapshot(); s.Probes != 0 || s.Health.State != health.StateUnknown {
			t.Errorf("backend %s recorded %d results from probes cut short by shutdown; state %s", b.Name, s.Probes, s.Health.State)
		}
	}
}

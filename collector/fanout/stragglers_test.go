package fanout

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/proxyheader"
)

// The round's waiting is timing logic, so these tests run in a synctest
// bubble over an in-memory transport: each backend answers `[i]` after its
// own delay on the bubble's clock, or gives up when its request is
// cancelled, and the time a round takes is exact.

// delayedTransport answers backend i's requests after delays[i], counting
// those cancelled before they were answered. A negative delay answers 503
// after its absolute value.
type delayedTransport struct {
	delays    []time.Duration
	cancelled atomic.Int64
}

func (d *delayedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var i int
	if _, err := fmt.Sscanf(req.URL.Host, "b%d.test", &i); err != nil {
		return nil, err
	}
	delay, status := d.delays[i], http.StatusOK
	if delay < 0 {
		delay, status = -delay, http.StatusServiceUnavailable
	}
	select {
	case <-time.After(delay):
	case <-req.Context().Done():
		d.cancelled.Add(1)
		return nil, req.Context().Err()
	}
	body := fmt.Sprintf("[%d]", i)
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}, nil
}

// delayedRig is a rig of len(delays) unprobed backends b0, b1, … that
// answer through a delayedTransport, with the fan-out settings of o.
func delayedRig(t *testing.T, o options, delays ...time.Duration) (*rig, *delayedTransport) {
	t.Helper()
	transport := &delayedTransport{delays: delays}
	return inMemoryRig(t, o, len(delays), transport, false, nil), transport
}

// inMemoryRig is a rig of n backends b0, b1, … at http://b<i>.test that
// answer through transport, probed or not, in the replica groups given
// by index (none for a nil groups), with the fan-out settings of o.
func inMemoryRig(t *testing.T, o options, n int, transport http.RoundTripper, probed bool, groups []string) *rig {
	t.Helper()
	placeholders := make([]*backend, n)
	o.urls, o.unprobed, o.groups = map[int]string{}, map[int]bool{}, map[int]string{}
	for i := range n {
		placeholders[i] = &backend{Server: &httptest.Server{}}
		o.urls[i], o.unprobed[i] = fmt.Sprintf("http://b%d.test", i), !probed
		if groups != nil {
			o.groups[i] = groups[i]
		}
	}
	r := setup(t, o, placeholders...)
	for _, b := range r.pool.Backends() {
		b.Client = &http.Client{Transport: transport}
	}
	return r
}

// stragglersOn is a fan-out cutting stragglers at the default factor and
// min_wait, exposing the missing backends.
func stragglersOn() config.Fanout {
	s := config.DefaultStragglers()
	s.Enabled = true
	return config.Fanout{Stragglers: s, ExposeMissing: true, MinContributors: config.IntOrPercent{Value: 1}}
}

// oneStalled are four backends answering in about 5ms and b2 stalled for
// 2s.
var oneStalled = []time.Duration{5 * time.Millisecond, 4 * time.Millisecond, 2 * time.Second, 6 * time.Millisecond, 5 * time.Millisecond}

// timedRound runs one round of r and returns its answer and how long it
// took on the bubble's clock.
func timedRound(r *rig, header http.Header) (*httptest.ResponseRecorder, time.Duration) {
	start := time.Now()
	rec := r.do("GET", "/fanout/q", "", header)
	return rec, time.Since(start)
}

// TestStragglerIsCutAtMinWait: one stalled backend among four fast ones
// is cut once min_wait has passed (three times the 5ms median is less),
// cancelled, named in X-Backends-Missing and counted, and the round is
// partial by design.
func TestStragglerIsCutAtMinWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, transport := delayedRig(t, options{fanout: stragglersOn()}, oneStalled...)
		rec, took := timedRound(r, nil)
		expect(t, rec, 200, "4/5", `[0,1,3,4]`)
		if took != 50*time.Millisecond {
			t.Errorf("the round took %v; want min_wait, 50ms", took)
		}
		if got := rec.Header().Get("X-Backends-Missing"); got != "b2=straggler" {
			t.Errorf("X-Backends-Missing %q; want b2=straggler", got)
		}
		synctest.Wait()
		if got := transport.cancelled.Load(); got != 1 {
			t.Errorf("%d requests cancelled; want the straggler's", got)
		}
		if got := testutil.ToFloat64(r.metrics.stragglers.child("b2")); got != 1 {
			t.Errorf("b2 cut %v times; want 1", got)
		}
		if got := testutil.ToFloat64(r.metrics.stragglers.child("b0")); got != 0 {
			t.Errorf("b0 cut %v times; want 0", got)
		}
		if got := [3]float64{testutil.ToFloat64(r.metrics.Partial), testutil.ToFloat64(r.metrics.partialStragglers), testutil.ToFloat64(r.metrics.partialMaintenance)}; got != [3]float64{1, 1, 0} {
			t.Errorf("partial, partial by stragglers, partial by maintenance %v; want [1 1 0]", got)
		}
		if last := r.fanout.LastRound(); last.Backends[2].Reason != MissingStraggler {
			t.Errorf("last round's b2 %+v; want reason straggler", last.Backends[2])
		}
	})
}

// TestStragglerWaitIsFactorTimesTheMedian: with slower peers the round
// waits three times their median, not min_wait.
func TestStragglerWaitIsFactorTimesTheMedian(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := time.Millisecond
		r, _ := delayedRig(t, options{fanout: stragglersOn()}, 30*ms, 40*ms, 2*time.Second, 20*ms, 35*ms)
		// The median of the first three is 30ms, so the cut is due at
		// 90ms; the fourth (35ms) moves the median to 32.5ms and the
		// cut to 97.5ms.
		rec, took := timedRound(r, nil)
		expect(t, rec, 200, "4/5", `[0,1,3,4]`)
		if want := 97500 * time.Microsecond; took != want {
			t.Errorf("the round took %v; want %v", took, want)
		}
	})
}

// TestStragglersOffWaitForEveryBackend: without fanout.stragglers the
// round waits for the stalled backend.
func TestStragglersOffWaitForEveryBackend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := delayedRig(t, options{fanout: config.Fanout{ExposeMissing: true, Stragglers: config.DefaultStragglers()}}, oneStalled...)
		rec, took := timedRound(r, nil)
		expect(t, rec, 200, "5/5", `[0,1,2,3,4]`)
		if took != 2*time.Second {
			t.Errorf("the round took %v; want the stall, 2s", took)
		}
	})
}

// TestEveryBackendSlowAlikeIsNotCut: five backends taking about 200ms
// each are judged against each other, so nobody is cut.
func TestEveryBackendSlowAlikeIsNotCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := time.Millisecond
		r, _ := delayedRig(t, options{fanout: stragglersOn()}, 200*ms, 210*ms, 190*ms, 205*ms, 200*ms)
		rec, took := timedRound(r, nil)
		expect(t, rec, 200, "5/5", `[0,1,2,3,4]`)
		if took != 210*ms {
			t.Errorf("the round took %v; want the slowest, 210ms", took)
		}
		if got := testutil.ToFloat64(r.metrics.partialStragglers); got != 0 {
			t.Errorf("%v rounds partial by stragglers; want 0", got)
		}
	})
}

// TestMinContributorsAllWaitsForEveryBackend: Probegate-Min-Contributors:
// all cuts nobody, and a round short of every selected backend is a 503
// naming the header.
func TestMinContributorsAllWaitsForEveryBackend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := delayedRig(t, options{fanout: stragglersOn()}, oneStalled...)
		all := http.Header{proxyheader.MinContributors: {"all"}}
		rec, took := timedRound(r, all)
		expect(t, rec, 200, "5/5", `[0,1,2,3,4]`)
		if took != 2*time.Second {
			t.Errorf("the round took %v; want the stall, 2s", took)
		}
		failing, _ := delayedRig(t, options{fanout: stragglersOn()}, 5*time.Millisecond, -4*time.Millisecond, 2*time.Second, 6*time.Millisecond, 5*time.Millisecond)
		rec, _ = timedRound(failing, all)
		expect(t, rec, 503, "4/5", "")
		if !strings.Contains(rec.Body.String(), "fewer than the 5 the Probegate-Min-Contributors header asks for") {
			t.Errorf("503 body %q does not name the header", rec.Body.String())
		}
	})
}

// TestMinContributorsRaisesTheQuorumNeverLowersIt: a number above the
// configured quorum raises it (capped at the backends selected) and with
// it what the straggler rule waits for; one below changes nothing.
func TestMinContributorsRaisesTheQuorumNeverLowersIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := delayedRig(t, options{fanout: stragglersOn()}, oneStalled...)
		// 5 of 5: the straggler rule must wait for every backend.
		rec, took := timedRound(r, http.Header{proxyheader.MinContributors: {"5"}})
		expect(t, rec, 200, "5/5", "")
		if took != 2*time.Second {
			t.Errorf("with 5 demanded, the round took %v; want the stall, 2s", took)
		}
		// More than there are is capped at the backends selected.
		rec, _ = timedRound(r, http.Header{proxyheader.MinContributors: {"99"}})
		expect(t, rec, 200, "5/5", "")

		cfg := stragglersOn()
		cfg.MinContributors = config.IntOrPercent{Value: 5}
		strict, _ := delayedRig(t, options{fanout: cfg}, 5*time.Millisecond, -4*time.Millisecond, 2*time.Second, 6*time.Millisecond, 5*time.Millisecond)
		rec, _ = timedRound(strict, http.Header{proxyheader.MinContributors: {"1"}})
		expect(t, rec, 503, "4/5", "")
		if !strings.Contains(rec.Body.String(), "fewer than the 5 fanout.min_contributors (5) asks for") {
			t.Errorf("503 body %q; want the configured quorum kept", rec.Body.String())
		}
	})
}

// TestMinContributorsInvalidIs400: a value that is neither a whole number
// from 1 up nor all, or a second value, is a 400 naming the header, and
// no backend is asked.
func TestMinContributorsInvalidIs400(t *testing.T) {
	b := serve(t, answer(200, `[0]`))
	r := setup(t, options{}, b)
	for _, values := range [][]string{{"0"}, {"-1"}, {"half"}, {"50%"}, {"2.5"}, {""}, {"3", "4"}, {strings.Repeat("9", 200) + "x"}} {
		rec := r.do("GET", "/fanout/q", "", http.Header{proxyheader.MinContributors: values})
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "Probegate-Min-Contributors") {
			t.Errorf("%q: status %d, body %q; want 400 naming the header", values, rec.Code, rec.Body.String())
		}
		if len(rec.Body.String()) > 300 {
			t.Errorf("%q: a %d-byte error; want the value cut short", values, len(rec.Body.String()))
		}
	}
	if hits := b.hits.Load(); hits != 0 {
		t.Errorf("the backend was asked %d times; want never", hits)
	}
	expect(t, r.do("GET", "/fanout/q", "", http.Header{proxyheader.MinContributors: {" ALL "}}), 200, "1/1", `[0]`)
}

// TestMinContributorsIsNotForwarded: the header is addressed to probegate,
// so no backend sees it, even when fanout.forward_headers names it.
func TestMinContributorsIsNotForwarded(t *testing.T) {
	b := serve(t, answer(200, `[0]`))
	r := setup(t, options{fanout: config.Fanout{ForwardHeaders: []string{"Accept", proxyheader.MinContributors}}}, b)
	expect(t, r.do("GET", "/fanout/q", "", http.Header{proxyheader.MinContributors: {"1"}, "Accept": {"application/json"}}), 200, "1/1", `[0]`)
	got := b.lastRequest().header
	if got.Get("Accept") != "application/json" || got.Get(proxyheader.MinContributors) != "" {
		t.Errorf("the backend saw %v; want Accept and no %s", got, proxyheader.MinContributors)
	}
}

// TestStragglerIsNotChargedToPassiveHealth: rounds that cut the same
// backend leave its passive-health window empty, however strict the
// rules, and count no fan-out error.
func TestStragglerIsNotChargedToPassiveHealth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		passive := config.PassiveHealth{Enabled: true, Window: model.Duration(time.Minute), MaxFailures: 1, MinSuccessRatio: 1, MinRequests: 1, MaxEjectedPercent: 100}
		r, _ := delayedRig(t, options{fanout: stragglersOn(), passive: passive}, oneStalled...)
		for range 5 {
			expect(t, r.do("GET", "/fanout/q", "", nil), 200, "4/5", "")
		}
		if h := r.backend(2).Health(); h.Ejected || !h.InService() {
			t.Fatalf("the straggler was ejected by passive health: %+v", h)
		}
		for reason := range traffic.NumReasons {
			if got := r.errors(2, reason); got != 0 {
				t.Errorf("the straggler has %d fan-out errors %s; want none", got, reason)
			}
		}
		if got := r.window(t, 2); got.requests() != 0 {
			t.Errorf("the straggler's passive window holds %+v; want nothing", got)
		}
	})
}

// TestStragglerFeedsOutlierDetectionTheTimeWaited: a backend cut round
// after round is judged by outlier detection on the time the rounds gave
// it, and ejected for latency; its duration series shows that time.
func TestStragglerFeedsOutlierDetectionTheTimeWaited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := delayedRig(t, options{fanout: stragglersOn()}, oneStalled...)
		s := r.settings
		s.Outlier = config.DefaultOutlierDetection()
		s.Outlier.Enabled, s.Outlier.MinRounds, s.Outlier.LatencyFloor = true, 5, model.Duration(10*time.Millisecond)
		if err := r.pool.Apply(r.targets, s); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			expect(t, r.do("GET", "/fanout/q", "", nil), 200, "4/5", "")
		}
		if h := r.backend(2).Served(); h.State() == health.ServedEjected {
			t.Fatalf("ejected before min_rounds: %+v", h)
		}
		expect(t, r.do("GET", "/fanout/q", "", nil), 200, "4/5", "")
		if h := r.backend(2).Served(); h.State() != health.ServedEjected {
			t.Errorf("the backend cut in every round is %+v; want ejected for latency", h)
		}
		if got := r.backend(2).Snapshot().Outlier.Reason; got.String() != "latency" {
			t.Errorf("ejected for %v; want latency", got)
		}
		h := testutil.CollectAndCount(r.metrics.backendDuration)
		if h != 5 {
			t.Errorf("%d duration histograms; want 5", h)
		}
		sum := histogramSum(t, r.metrics.backendDuration.child("b2"))
		if want := 5 * 0.05; sum < want-1e-9 || sum > want+1e-9 {
			t.Errorf("the straggler's durations sum to %vs; want 5 rounds of the 50ms waited", sum)
		}
	})
}

// histogramSum is the sum of the observations of a histogram.
func histogramSum(t *testing.T, o prometheus.Observer) float64 {
	t.Helper()
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleSum()
}

// TestCutKeepsAContributionThatArrivedWithTheCut: when the cut and a
// backend's whole answer are ready at once, the answer already waiting on
// done is kept, neither overwritten as a straggler's nor counted as one.
func TestCutKeepsAContributionThatArrivedWithTheCut(t *testing.T) {
	r, _ := delayedRig(t, options{fanout: stragglersOn()}, 5*time.Millisecond, 50*time.Millisecond, 2*time.Second)
	selection, _, _ := r.pool.GroupSelection()
	groups := r.fanout.newRoundGroups(selection)
	rd := &round{f: r.fanout, s: r.fanout.settings.Load(), ctx: context.Background(), groups: groups,
		attempts: make([]attempt, len(groups)), n: len(groups), done: make(chan int, len(groups))}
	cancelled := make([]bool, len(groups))
	for k := range groups {
		rd.attempts[k] = attempt{group: k, cancel: func() { cancelled[k] = true }, answer: backendAnswer{backend: groups[k].replicas[0]}}
		groups[k].running = 1
	}
	rd.attempts[0].answer.contributed = true
	rd.finish(0)
	rd.attempts[1].answer.contributed, rd.attempts[1].answer.latency = true, 50*time.Millisecond
	// b1 reported before the cut was acted on; b2 reports once cancelled.
	rd.done <- 1
	rd.done <- 2
	rd.cutStragglers()
	rd.drain()
	var answers []backendAnswer
	for a := range rd.ordered {
		answers = append(answers, a.answer)
	}
	selected := r.pool.Backends()
	if answers[1].outcome.Reason == traffic.Straggler || !answers[1].contributed || answers[1].latency != 50*time.Millisecond || groups[1].winner != 1 {
		t.Errorf("b1's answer, whole before the cut, became %+v", answers[1])
	}
	if answers[2].outcome.Reason != traffic.Straggler || !cancelled[2] || groups[2].winner >= 0 {
		t.Errorf("b2 was not cut: %+v, cancelled %v", answers[2], cancelled[2])
	}
	if got := testutil.ToFloat64(r.metrics.stragglers.child(selected[1].Name)); got != 0 {
		t.Errorf("b1 counted as a straggler %v times", got)
	}
	if got := testutil.ToFloat64(r.metrics.stragglers.child(selected[2].Name)); got != 1 {
		t.Errorf("b2 counted as a straggler %v times, want 1", got)
	}
}

package fanout

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/proxyheader"
)

// Replica groups are timing logic too (hedges), so these tests run in a
// synctest bubble over an in-memory transport, as the straggler tests do.

// reply is how a scripted backend answers one request: after delay, with
// status (200 when 0).
type reply struct {
	delay  time.Duration
	status int
}

// scriptedTransport answers backend i's n-th request (from 0) as
// script(i, n) says, with the body `[i]`, counting each backend's
// requests and those cancelled before they were answered.
type scriptedTransport struct {
	script    func(i, n int) reply
	mu        sync.Mutex
	requests  map[int]int
	cancelled atomic.Int64
}

func (s *scriptedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var i int
	if _, err := fmt.Sscanf(req.URL.Host, "b%d.test", &i); err != nil {
		return nil, err
	}
	s.mu.Lock()
	n := s.requests[i]
	s.requests[i]++
	s.mu.Unlock()
	rep := s.script(i, n)
	select {
	case <-time.After(rep.delay):
	case <-req.Context().Done():
		s.cancelled.Add(1)
		return nil, req.Context().Err()
	}
	if rep.status == 0 {
		rep.status = http.StatusOK
	}
	body := fmt.Sprintf("[%d]", i)
	return &http.Response{StatusCode: rep.status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}, nil
}

// asked is how many requests backend i was sent.
func (s *scriptedTransport) asked(i int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[i]
}

// total is how many requests every backend was sent together.
func (s *scriptedTransport) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.requests {
		n += c
	}
	return n
}

// groupedRig is a rig of len(groups) backends b0, b1, … in the
// replica groups given ("" leaves a backend a group of its own),
// answering through a scriptedTransport.
func groupedRig(t *testing.T, o options, script func(i, n int) reply, groups ...string) (*rig, *scriptedTransport) {
	t.Helper()
	transport := &scriptedTransport{script: script, requests: map[int]int{}}
	// Probed, so that a test can take a backend out by its probes; no
	// prober runs.
	return inMemoryRig(t, o, len(groups), transport, true, groups), transport
}

// fast answers every request in 5ms.
func fast(int, int) reply { return reply{delay: 5 * time.Millisecond} }

// exposing is a fan-out exposing the missing groups and who served.
func exposing() config.Fanout {
	return config.Fanout{ExposeMissing: true, MinContributors: config.IntOrPercent{Value: 1}}
}

// servedBy reads X-Backends-Served-By into group → replica.
func servedBy(t *testing.T, rec *httptest.ResponseRecorder) map[string]string {
	t.Helper()
	out := map[string]string{}
	for entry := range strings.SplitSeq(rec.Header().Get("X-Backends-Served-By"), ", ") {
		group, replica, ok := strings.Cut(entry, "=")
		if !ok {
			t.Fatalf("X-Backends-Served-By %q: entry %q is not group=replica", rec.Header().Get("X-Backends-Served-By"), entry)
		}
		out[group] = replica
	}
	return out
}

// TestGroupsAskOneReplicaEach: a round asks one replica of each group,
// counts and merges groups in their configuration order (that of their
// first member) whichever replica answered, and names the replica each
// group's answer came from.
func TestGroupsAskOneReplicaEach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// s2 comes first: its first member is b0. s2's replicas answer
		// after s1's, and still come first in the merge.
		script := func(i, _ int) reply {
			if i == 0 || i == 2 {
				return reply{delay: 20 * time.Millisecond}
			}
			return reply{delay: 5 * time.Millisecond}
		}
		r, transport := groupedRig(t, options{fanout: exposing()}, script, "s2", "s1", "s2", "s1", "")
		for round := range 20 {
			rec := r.do("GET", "/fanout/q", "", nil)
			served := servedBy(t, rec)
			want := fmt.Sprintf("[%s,%s,4]", strings.TrimPrefix(served["s2"], "b"), strings.TrimPrefix(served["s1"], "b"))
			expect(t, rec, 200, "3/3", want)
			if len(served) != 3 || served["b4"] != "b4" {
				t.Errorf("round %d: X-Backends-Served-By %q; want s2, s1 and b4 each named once", round, rec.Header().Get("X-Backends-Served-By"))
			}
			if got := rec.Header().Get("X-Backends-Missing"); got != "" {
				t.Errorf("round %d: X-Backends-Missing %q on a whole round", round, got)
			}
			if got := transport.total(); got != 3*(round+1) {
				t.Fatalf("round %d: %d backend requests in all; want 3 a round", round, got)
			}
		}
		// Every replica keeps a share of the rounds.
		for i := range 4 {
			if transport.asked(i) == 0 {
				t.Errorf("b%d was never asked in 20 rounds", i)
			}
		}
		summary := r.fanout.LastRound()
		if summary.Contributed != 3 || summary.Configured != 3 || len(summary.Backends) != 5 {
			t.Fatalf("last round %+v; want 3 of 3 groups and every backend listed", summary)
		}
		outcomes := map[Outcome]int{}
		for _, b := range summary.Backends {
			outcomes[b.Outcome]++
			if want := map[string]string{"b0": "s2", "b2": "s2", "b1": "s1", "b3": "s1", "b4": "b4"}[b.Name]; b.Group != want {
				t.Errorf("last round lists %s in group %q; want %q", b.Name, b.Group, want)
			}
		}
		if outcomes[OutcomeContributed] != 3 || outcomes[OutcomeUnasked] != 2 {
			t.Errorf("last round's outcomes %v; want 3 contributed, 2 unasked", outcomes)
		}
	})
}

// TestGroupMissingIsNamedByGroup: a group with no replica in service is
// missing under its own name with its replicas' reason, X-Backends,
// min_contributors and Probegate-Min-Contributors count groups, and a
// replica out of service is never asked.
func TestGroupMissingIsNamedByGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, transport := groupedRig(t, options{fanout: exposing()}, fast, "s1", "s1", "s2", "s2", "s3", "s3")
		// s3 down: both replicas unhealthy; s1 and s2 on one replica each.
		for _, i := range []int{1, 3, 4, 5} {
			down(r, i)
		}
		rec := r.do("GET", "/fanout/q", "", nil)
		expect(t, rec, 200, "2/3", "")
		if got := rec.Header().Get("X-Backends-Missing"); got != "s3=unhealthy" {
			t.Errorf("X-Backends-Missing %q; want s3=unhealthy", got)
		}
		if served := servedBy(t, rec); served["s1"] != "b0" || served["s2"] != "b2" || len(served) != 2 {
			t.Errorf("X-Backends-Served-By %v; want s1=b0, s2=b2", served)
		}
		for _, i := range []int{1, 3, 4, 5} {
			if transport.asked(i) != 0 {
				t.Errorf("b%d asked while out of service", i)
			}
		}
		rec = r.do("GET", "/fanout/q", "", http.Header{proxyheader.MinContributors: {"all"}})
		expect(t, rec, 503, "2/3", "")
		var e fanoutError
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if len(e.Backends) != 1 || e.Backends[0].Backend != "s3" || e.Backends[0].Reason != "unhealthy" || !strings.Contains(e.Error, "2 of 3") {
			t.Errorf("503 body %s; want 2 of 3, naming s3 unhealthy", rec.Body)
		}
		// Three is as many as all: capped at the groups configured.
		rec = r.do("GET", "/fanout/q", "", http.Header{proxyheader.MinContributors: {"6"}})
		expect(t, rec, 503, "2/3", "")
		if !strings.Contains(rec.Body.String(), "fewer than the 3 ") {
			t.Errorf("503 body %s; want a quorum of the 3 groups", rec.Body)
		}
	})
}

// TestMinContributorsCountsGroups: min_contributors as a percentage is of
// the groups, not of the backends.
func TestMinContributorsCountsGroups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := exposing()
		o.MinContributors = config.IntOrPercent{Value: 100, Percent: true}
		r, _ := groupedRig(t, options{fanout: o}, fast, "s1", "s1", "s2", "s2")
		expect(t, r.do("GET", "/fanout/q", "", nil), 200, "2/2", "")
		down(r, 2)
		down(r, 3)
		rec := r.do("GET", "/fanout/q", "", nil)
		expect(t, rec, 503, "1/2", "")
		if !strings.Contains(rec.Body.String(), "1 of 2 backends contributed, fewer than the 2") {
			t.Errorf("503 body %s; want the quorum of 2 groups", rec.Body)
		}
	})
}

// TestFailoverReplacesAFailingReplica: a replica answering 503 is
// replaced at once by its sibling, so every round is whole; the failure
// still feeds passive health, and each failover is counted. Without
// failover the group is missing whenever the failing replica is chosen.
func TestFailoverReplacesAFailingReplica(t *testing.T) {
	failing := func(i, _ int) reply {
		if i == 0 {
			return reply{delay: time.Millisecond, status: http.StatusServiceUnavailable}
		}
		return reply{delay: 5 * time.Millisecond}
	}
	synctest.Test(t, func(t *testing.T) {
		o := exposing()
		o.Failover = true
		r, transport := groupedRig(t, options{fanout: o}, failing, "s1", "s1", "")
		for round := range 20 {
			rec := r.do("GET", "/fanout/q", "", nil)
			expect(t, rec, 200, "2/2", "[1,2]")
			if served := servedBy(t, rec); served["s1"] != "b1" {
				t.Errorf("round %d: s1 served by %q; want b1", round, served["s1"])
			}
		}
		failed := transport.asked(0)
		if failed == 0 {
			t.Fatal("b0 was never chosen in 20 rounds")
		}
		if got := testutil.ToFloat64(r.metrics.failovers.child("s1")); got != float64(failed) {
			t.Errorf("%v failovers counted; want one per b0 request, %d", got, failed)
		}
		if got := r.errors(0, traffic.HTTP5xx); got != uint64(failed) {
			t.Errorf("b0 charged %d 5xx errors; want %d", got, failed)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		r, transport := groupedRig(t, options{fanout: exposing()}, failing, "s1", "s1", "")
		partial := 0
		for range 20 {
			if rec := r.do("GET", "/fanout/q", "", nil); rec.Header().Get("X-Backends") == "1/2" {
				partial++
				if got := rec.Header().Get("X-Backends-Missing"); got != "s1=http_5xx" {
					t.Errorf("X-Backends-Missing %q; want s1=http_5xx", got)
				}
			}
		}
		if partial == 0 || partial != transport.asked(0) || transport.total() != 40 {
			t.Errorf("%d partial rounds, b0 asked %d times, %d requests; want a partial round per b0 request and 2 requests a round", partial, transport.asked(0), transport.total())
		}
	})
}

// hedging is a fan-out hedging after a fixed 20ms, up to max percent of
// the requests.
func hedging(after time.Duration, maxPercent float64) config.Fanout {
	o := exposing()
	o.Hedge = config.Hedge{Enabled: true, After: config.HedgeAfter{Duration: model.Duration(after)}, MaxPercent: maxPercent}
	return o
}

// TestHedgeAsksTheSiblingOfALateReplica: when the chosen replica has not
// answered by the hedge delay, its sibling is asked too; the first whole
// answer wins and the late request is cancelled, and the hedge is counted
// won. No round waits for the late replica.
func TestHedgeAsksTheSiblingOfALateReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		late := func(i, _ int) reply {
			if i == 0 {
				return reply{delay: time.Second}
			}
			return reply{delay: 5 * time.Millisecond}
		}
		r, transport := groupedRig(t, options{fanout: hedging(20*time.Millisecond, 100)}, late, "s1", "s1")
		for round := range 20 {
			rec, took := timedRound(r, nil)
			expect(t, rec, 200, "1/1", "[1]")
			if took > 25*time.Millisecond {
				t.Errorf("round %d took %v; want at most the hedge delay and the sibling's 5ms", round, took)
			}
		}
		synctest.Wait()
		hedged := transport.asked(0)
		if hedged == 0 {
			t.Fatal("b0 was never chosen in 20 rounds")
		}
		if got := testutil.ToFloat64(r.metrics.hedges.child("s1").won); got != float64(hedged) {
			t.Errorf("%v hedges won; want one per b0 request, %d", got, hedged)
		}
		if got := testutil.ToFloat64(r.metrics.hedges.child("s1").lost); got != 0 {
			t.Errorf("%v hedges lost; want none", got)
		}
		if got := transport.cancelled.Load(); got != int64(hedged) {
			t.Errorf("%d requests cancelled; want every late b0 request, %d", got, hedged)
		}
		// The late replica's cancelled requests are not failures.
		if got := r.backend(0).Snapshot().Traffic; got.Errors != ([traffic.NumReasons]uint64{}) {
			t.Errorf("b0 charged errors %v for requests a hedge outran", got.Errors)
		}
		outrun := false
		for _, b := range r.fanout.LastRound().Backends {
			outrun = outrun || b.Outcome == OutcomeOutrun
		}
		if last := transport.asked(0); last > 0 && r.fanout.LastRound().Backends[0].Name == "b0" && !outrun {
			t.Errorf("last round %+v: b0 asked first but not outrun", r.fanout.LastRound().Backends)
		}
	})
}

// TestHedgeLostWhenTheReplicaAnswersFirst: a hedge sent to a sibling
// slower than the late replica loses, and the sibling's request is
// cancelled.
func TestHedgeLostWhenTheReplicaAnswersFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// b0 answers in 30ms, b1 in a second: b1's hedge of b0 loses,
		// and b0's hedge of b1 wins.
		script := func(i, _ int) reply {
			if i == 0 {
				return reply{delay: 30 * time.Millisecond}
			}
			return reply{delay: time.Second}
		}
		r, transport := groupedRig(t, options{fanout: hedging(20*time.Millisecond, 100)}, script, "s1", "s1")
		for round := range 20 {
			rec, took := timedRound(r, nil)
			expect(t, rec, 200, "1/1", "[0]")
			if took > 50*time.Millisecond {
				t.Errorf("round %d took %v; want at most 50ms", round, took)
			}
		}
		synctest.Wait()
		won, lost := testutil.ToFloat64(r.metrics.hedges.child("s1").won), testutil.ToFloat64(r.metrics.hedges.child("s1").lost)
		if won+lost != 20 || lost == 0 || transport.cancelled.Load() != 20 {
			t.Errorf("hedges won %v, lost %v, %d requests cancelled; want 20 hedges, some lost, and the slower of each pair cancelled",
				won, lost, transport.cancelled.Load())
		}
	})
}

// TestHedgesStayWithinMaxPercent: when every replica of a group is slow,
// the token bucket keeps the hedges within max_percent of the backend
// requests, and counts the hedges refused.
func TestHedgesStayWithinMaxPercent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := func(int, int) reply { return reply{delay: 300 * time.Millisecond} }
		r, transport := groupedRig(t, options{fanout: hedging(20*time.Millisecond, 10)}, slow, "s1", "s1", "s2", "s2")
		for range 50 {
			expect(t, r.do("GET", "/fanout/q", "", nil), 200, "2/2", "")
		}
		var hedges float64
		for _, g := range []string{"s1", "s2"} {
			c := r.metrics.hedges.child(g)
			hedges += testutil.ToFloat64(c.won) + testutil.ToFloat64(c.lost)
		}
		refused := testutil.ToFloat64(r.metrics.hedgesRefused)
		if hedges == 0 || hedges > 0.1*float64(transport.total()) {
			t.Errorf("%v hedges of %d backend requests; want some, at most 10%%", hedges, transport.total())
		}
		// Every group of every round wanted a hedge: those not sent were
		// refused.
		if hedges+refused != 100 {
			t.Errorf("%v hedges and %v refused; want the 100 hedges wanted", hedges, refused)
		}
	})
}

// TestHedgeWaitsForTheGroupsAnswersWhenAuto: with after: auto, no hedge
// goes out before the group has 20 answers; then the delay is the group's
// p95, at least min_after.
func TestHedgeWaitsForTheGroupsAnswersWhenAuto(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Every request is answered in 10ms, but b0's every fifteenth
		// from its 20th on, which takes a second: never during the 19
		// rounds before the group has 20 answers (a stall then would
		// weigh against b0 for seconds), and never one of b1's, so that
		// every hedge of a stall wins. The stalls stay under 5% of the
		// group's answers, so that its p95 is not a stall.
		script := func(i, n int) reply {
			if i == 0 && n >= 19 && n%15 == 0 {
				return reply{delay: time.Second}
			}
			return reply{delay: 10 * time.Millisecond}
		}
		o := hedging(0, 100)
		o.Hedge.After, o.Hedge.MinAfter = config.HedgeAfter{Auto: true}, model.Duration(15*time.Millisecond)
		r, _ := groupedRig(t, options{fanout: o}, script, "s1", "s1")
		for range 19 {
			expect(t, r.do("GET", "/fanout/q", "", nil), 200, "1/1", "")
		}
		if got := testutil.ToFloat64(r.metrics.hedges.child("s1").won); got != 0 {
			t.Fatalf("%v hedges before 20 answers; want none", got)
		}
		for round := range 100 {
			rec, took := timedRound(r, nil)
			expect(t, rec, 200, "1/1", "")
			// The p95 of answers of 10ms is at most 1/16 above it, below
			// min_after: a late request is hedged at 15ms.
			if took > 25*time.Millisecond {
				t.Errorf("round %d took %v; want a late replica hedged at min_after", 19+round, took)
			}
		}
		if got := testutil.ToFloat64(r.metrics.hedges.child("s1").won); got == 0 {
			t.Error("no hedge won; want b0's late requests hedged")
		}
	})
}

// TestStragglerCutCountsGroups: the straggler cut judges groups: a group
// whose chosen replica stalls is cut and named.
func TestStragglerCutCountsGroups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := func(i, _ int) reply {
			if i == 4 || i == 5 {
				return reply{delay: 2 * time.Second}
			}
			return reply{delay: 5 * time.Millisecond}
		}
		r, _ := groupedRig(t, options{fanout: stragglersOn()}, script, "s1", "s1", "s2", "s2", "s3", "s3")
		rec, took := timedRound(r, nil)
		expect(t, rec, 200, "2/3", "")
		if got := rec.Header().Get("X-Backends-Missing"); got != "s3=straggler" || took != 50*time.Millisecond {
			t.Errorf("X-Backends-Missing %q after %v; want s3=straggler at min_wait", got, took)
		}
		if got := testutil.ToFloat64(r.metrics.partialStragglers); got != 1 {
			t.Errorf("%v partial rounds by stragglers; want 1", got)
		}
	})
}

// TestWithoutGroupsNothingIsHedged: a pool without groups has a group of
// one per backend: nothing to hedge or fail over to, no group series, no
// X-Backends-Served-By.
func TestWithoutGroupsNothingIsHedged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := func(i, _ int) reply {
			if i == 0 {
				return reply{delay: 100 * time.Millisecond, status: http.StatusBadGateway}
			}
			return reply{delay: 5 * time.Millisecond}
		}
		o := hedging(20*time.Millisecond, 100)
		o.Failover = true
		r, transport := groupedRig(t, options{fanout: o}, script, "", "")
		rec, took := timedRound(r, nil)
		expect(t, rec, 200, "1/2", "[1]")
		if took != 100*time.Millisecond || transport.total() != 2 {
			t.Errorf("round took %v with %d requests; want b0's 100ms and one request a backend", took, transport.total())
		}
		if got := rec.Header().Get("X-Backends-Served-By"); got != "" {
			t.Errorf("X-Backends-Served-By %q without groups", got)
		}
		if n := testutil.CollectAndCount(r.metrics.hedges) + testutil.CollectAndCount(r.metrics.failovers); n != 0 {
			t.Errorf("%d group series without groups; want none", n)
		}
	})
}

// TestGroupSeriesOnlyWhileTheirFeatureIsOn: hedges and the refused
// hedges are exported only while hedging is on, failovers only while
// failover is on, and only for groups of two or more.
func TestGroupSeriesOnlyWhileTheirFeatureIsOn(t *testing.T) {
	r, _ := groupedRig(t, options{fanout: exposing()}, fast, "s1", "s1", "")
	count := func() (hedges, refused, failovers int) {
		return testutil.CollectAndCount(r.metrics.hedges), testutil.CollectAndCount(metricsCollector{r.metrics}, "probegate_fanout_hedges_refused_total"),
			testutil.CollectAndCount(r.metrics.failovers)
	}
	if h, rf, f := count(); h+rf+f != 0 {
		t.Errorf("hedges %d, refused %d, failovers %d series with both off; want none", h, rf, f)
	}
	o := hedging(20*time.Millisecond, 10)
	o.Enabled, o.Failover = true, true
	r.fanout.Update(o)
	if h, rf, f := count(); h != 2 || rf != 1 || f != 1 {
		t.Errorf("hedges %d, refused %d, failovers %d series with both on; want s1's won and lost, one, and s1's", h, rf, f)
	}
}

// down takes backend i out of service by three failed probes.
func down(r *rig, i int) { feed(r.backend(i), health.StatusResult(503), 3) }

// TestGroupMissingForMaintenanceOnlyWhenAllReplicasAre: a group none of
// whose replicas is in service is missing for the reason of its first
// replica not in maintenance, so that the round is partial by design
// (counted apart for the alert) only when every replica is in
// maintenance.
func TestGroupMissingForMaintenanceOnlyWhenAllReplicasAre(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := groupedRig(t, options{fanout: exposing()}, fast, "s1", "s1", "s2", "s2")
		r.pool.SetMaintenance([]entries.Entry{{Backend: "b2", Reason: "test"}, {Backend: "b3", Reason: "test"}}, entries.KeptByClock)
		rec := r.do("GET", "/fanout/q", "", nil)
		if got := rec.Header().Get("X-Backends-Missing"); got != "s2=maintenance" {
			t.Errorf("X-Backends-Missing %q; want s2=maintenance", got)
		}
		if got := testutil.ToFloat64(r.metrics.partialMaintenance); got != 1 {
			t.Errorf("%v partial rounds in maintenance; want 1", got)
		}
		r.pool.SetMaintenance([]entries.Entry{{Backend: "b2", Reason: "test"}}, entries.KeptByClock)
		down(r, 3)
		rec = r.do("GET", "/fanout/q", "", nil)
		if got := rec.Header().Get("X-Backends-Missing"); got != "s2=unhealthy" {
			t.Errorf("X-Backends-Missing %q; want s2=unhealthy", got)
		}
		if got := testutil.ToFloat64(r.metrics.partialMaintenance); got != 1 {
			t.Errorf("%v partial rounds in maintenance; want still 1", got)
		}
	})
}

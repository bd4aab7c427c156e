package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Replica groups against real loopback backends: four groups of two
// replicas answering in about 5ms, as the contract measures them.

const replicaFast = 5 * time.Millisecond

// groupedConfig writes a configuration with the fan-out on, probes every
// interval, the extra YAML under fanout: (indented by two), and the
// backends s<g>-<a|b> at urls in groups s1, s2, … of two, and returns
// its path.
func groupedConfig(t *testing.T, interval time.Duration, fanoutExtra string, urls ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "health_probe: {interval: %s, timeout: 100ms, successes: 1}\n", interval)
	b.WriteString("fanout:\n  enabled: true\n  timeout: 5s\n  expose_missing: true\n" + fanoutExtra + "backends:\n")
	for i, u := range urls {
		g := i/2 + 1
		fmt.Fprintf(&b, "  - {name: s%d-%c, url: %q, group: s%d}\n", g, 'a'+rune(i%2), u, g)
	}
	path := filepath.Join(t.TempDir(), "probegate.yml")
	writeFile(t, path, b.String())
	return path
}

// stallingAnswer answers in fast, and every every-th request (counting
// from the first) after stall, or nothing once the request is cancelled.
func stallingAnswer(fast, stall time.Duration, every int64) http.HandlerFunc {
	var n atomic.Int64
	return func(w http.ResponseWriter, r *http.Request) {
		delay := fast
		if n.Add(1)%every == 0 {
			delay = stall
		}
		delayedAnswer(delay)(w, r)
	}
}

// replicaPairs starts four groups of two loopback backends: replica a of
// each answers as first says, replica b in about 5ms.
func replicaPairs(t *testing.T, first func() http.HandlerFunc) []*countingBackend {
	t.Helper()
	var backends []*countingBackend
	for range 4 {
		backends = append(backends, newCountingBackend(t, first()), newCountingBackend(t, delayedAnswer(replicaFast)))
	}
	return backends
}

func urlsOf(backends []*countingBackend) []string {
	urls := make([]string, len(backends))
	for i, b := range backends {
		urls[i] = b.URL
	}
	return urls
}

func hitsOf(backends []*countingBackend) int64 {
	var n int64
	for _, b := range backends {
		n += b.hits.Load()
	}
	return n
}

// timeQueries sends n queries, concurrency at a time, and returns how
// long each took; every answer must be a 200 with X-Backends want.
func timeQueries(t *testing.T, url, want string, n, concurrency int) []time.Duration {
	t.Helper()
	took := make([]time.Duration, n)
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for range concurrency {
		wg.Go(func() {
			for i := range work {
				status, header, _, d := timedFanoutGet(t, url, nil)
				took[i] = d
				if got := header.Get("X-Backends"); status != http.StatusOK || got != want {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%d X-Backends %q X-Backends-Missing %q", status, got, header.Get("X-Backends-Missing")))
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of %d answers not 200 with X-Backends %s, e.g. %s", len(failures), n, want, failures[0])
	}
	return took
}

// TestGroupsHedgeTheStalledReplica: four groups of two replicas, one
// replica of each stalling one answer in twenty for 2s. With groups and
// hedging every answer is whole (4/4), the rounds ask at most 4.6 backends
// a query, and p99 stays under 100ms: no round waits for a stall.
//
// The bound is made robust on a loaded machine two ways. The queries run
// one at a time, so that the test adds little load of its own, and the
// same number of rounds through a second probegate whose backends never
// stall measures what the machine itself adds to a round now: the bound
// is 100ms plus whatever that control's p99 is above 10ms. And no round
// may take half the stall: one that waits for a stall takes 2s, far
// beyond anything load adds.
func TestGroupsHedgeTheStalledReplica(t *testing.T) {
	const stall, queries = 2 * time.Second, 300
	backends := replicaPairs(t, func() http.HandlerFunc { return stallingAnswer(replicaFast, stall, 20) })
	hedgeYAML := "  hedge: {enabled: true, after: auto, min_after: 10ms, max_percent: 10}\n"
	p := startProbegate(t, "--config.file="+groupedConfig(t, 200*time.Millisecond, hedgeYAML, urlsOf(backends)...))
	control := replicaPairs(t, func() http.HandlerFunc { return delayedAnswer(replicaFast) })
	c := startProbegate(t, "--config.file="+groupedConfig(t, 200*time.Millisecond, hedgeYAML, urlsOf(control)...))
	waitHealthy(t, p, 8)
	waitHealthy(t, c, 8)

	// Warm up: automatic hedging waits for 20 answers a group, which 40
	// queries give, eight at a time (a stall meanwhile is waited for).
	timeQueries(t, p.base+"/fanout/q", "4/4", 40, 8)
	before := hitsOf(backends)
	took := timeQueries(t, p.base+"/fanout/q", "4/4", queries, 1)
	perQuery := float64(hitsOf(backends)-before) / queries
	controlTook := timeQueries(t, c.base+"/fanout/q", "4/4", queries, 1)

	p50, p99 := percentile(took, 50), percentile(took, 99)
	controlP99 := percentile(controlTook, 99)
	bound := 100*time.Millisecond + max(0, controlP99-10*time.Millisecond)
	t.Logf("4 groups x 2 replicas, one replica of each stalling 5%% of answers by %v: %.2f backend requests a query, p50 %v, p99 %v, max %v (control without stalls: p99 %v; bound %v)",
		stall, perQuery, p50, p99, percentile(took, 100), controlP99, bound)
	if perQuery > 4.6 {
		t.Errorf("%.2f backend requests a query; want at most 4.6", perQuery)
	}
	if p99 > bound {
		t.Errorf("p99 %v; want at most %v", p99, bound)
	}
	// Without hedging the p99 alone can hold too: a replica whose answer
	// stalled weighs little in the choice for seconds after, so few
	// rounds ask it. No round may wait for a stall at all.
	if worst := percentile(took, 100); worst >= stall/2 {
		t.Errorf("a round took %v; want none waiting for the %v stall", worst, stall)
	}
	if won := metricValue(t, p.base, `probegate_fanout_hedges_total{group="s1",outcome="won"}`); won == 0 {
		t.Error("no hedge of s1 won; want its stalled answers hedged")
	}
}

// TestGroupsBothReplicasSlowHedgeWithinMaxPercent: when both replicas of
// a group answer in 300ms, every round wants to hedge it, and the token
// bucket keeps the hedges within max_percent of the backend requests.
func TestGroupsBothReplicasSlowHedgeWithinMaxPercent(t *testing.T) {
	const slow = 300 * time.Millisecond
	var backends []*countingBackend
	for g := range 4 {
		delay := replicaFast
		if g == 3 {
			delay = slow
		}
		backends = append(backends, newCountingBackend(t, delayedAnswer(delay)), newCountingBackend(t, delayedAnswer(delay)))
	}
	p := startProbegate(t, "--config.file="+groupedConfig(t, 200*time.Millisecond,
		"  hedge: {enabled: true, after: 50ms, max_percent: 10}\n", urlsOf(backends)...))
	waitHealthy(t, p, 8)
	timeQueries(t, p.base+"/fanout/q", "4/4", 80, 8)
	var hedges float64
	for g := range 4 {
		for _, outcome := range []string{"won", "lost"} {
			hedges += metricValue(t, p.base, fmt.Sprintf(`probegate_fanout_hedges_total{group="s%d",outcome=%q}`, g+1, outcome))
		}
	}
	requests := hitsOf(backends)
	refused := metricValue(t, p.base, "probegate_fanout_hedges_refused_total")
	t.Logf("both replicas of s4 at %v: %v hedges and %v refused of %d backend requests", slow, hedges, refused, requests)
	if hedges > 0.1*float64(requests) {
		t.Errorf("%v hedges of %d backend requests; want at most 10%%", hedges, requests)
	}
	if refused == 0 {
		t.Error("no hedge refused; want the bucket to refuse most of s4's")
	}
}

// TestGroupsWholeGroupKilled: with both replicas of a group killed,
// answers at once come from the three other groups, naming the group
// missing (before the probes notice, and after), and a client demanding
// all of them gets 503 naming it.
func TestGroupsWholeGroupKilled(t *testing.T) {
	const interval = 200 * time.Millisecond
	backends := replicaPairs(t, func() http.HandlerFunc { return delayedAnswer(replicaFast) })
	p := startProbegate(t, "--config.file="+groupedConfig(t, interval, "", urlsOf(backends)...))
	waitHealthy(t, p, 8)
	for _, b := range backends[6:] {
		b.CloseClientConnections()
		b.Close()
	}
	killed := time.Now()
	for time.Since(killed) < 2*interval {
		status, header, _, d := timedFanoutGet(t, p.base+"/fanout/q", nil)
		missing := header.Get("X-Backends-Missing")
		if status != http.StatusOK || header.Get("X-Backends") != "3/4" || !strings.HasPrefix(missing, "s4=") {
			t.Fatalf("%d, X-Backends %q, X-Backends-Missing %q; want 200, 3/4, s4 named", status, header.Get("X-Backends"), missing)
		}
		if d > interval {
			t.Errorf("a round took %v with s4 killed; want it within one probe interval, %v", d, interval)
		}
	}
	status, header, body := fanoutGet(t, p.base+"/fanout/q", http.Header{"Probegate-Min-Contributors": {"all"}})
	if status != http.StatusServiceUnavailable || header.Get("X-Backends") != "3/4" || !strings.Contains(body, `"backend":"s4"`) {
		t.Errorf("all: %d, X-Backends %q, %s; want 503, 3/4, naming s4", status, header.Get("X-Backends"), body)
	}
}

// TestGroupsReplicaKilledFailsOver: with one replica killed before its
// probes notice, every answer is still whole (its sibling answers for
// it), and none takes longer than twice the median plus 50ms.
func TestGroupsReplicaKilledFailsOver(t *testing.T) {
	backends := replicaPairs(t, func() http.HandlerFunc { return delayedAnswer(replicaFast) })
	// Probes a minute apart: none notices the kill during the test.
	p := startProbegate(t, "--config.file="+groupedConfig(t, time.Minute, "", urlsOf(backends)...))
	waitHealthy(t, p, 8)
	backends[0].CloseClientConnections()
	backends[0].Close()
	took := timeQueries(t, p.base+"/fanout/q", "4/4", 100, 1)
	p50, worst := percentile(took, 50), percentile(took, 100)
	t.Logf("s1-a killed: 100 rounds whole, p50 %v, max %v", p50, worst)
	if worst > 2*p50+50*time.Millisecond {
		t.Errorf("slowest round %v; want at most 2 x p50 + 50ms, %v", worst, 2*p50+50*time.Millisecond)
	}
	if got := metricValue(t, p.base, `probegate_fanout_failovers_total{group="s1"}`); got == 0 {
		t.Error("no failover counted for s1")
	}
	if state := getHealthz(t, p.base)["s1-a"].State; state != "healthy" {
		t.Errorf("s1-a is %s; want its probes not to have noticed yet", state)
	}
}

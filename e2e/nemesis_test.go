package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The nemesis: a seeded sequence of the fault tests' faults interleaved
// with random grants and ends on random replicas, each fault healed before
// the next, after which the recorded history is held to the invariant.
// The seed decides every choice (which fault, on which replica, how many
// requests, which backend, which ttl, how long to wait), so a failing
// seed replays the same sequence; the timing of the processes is the
// machine's.

// Environment variables of the nemesis.
const (
	// nemesisSeedEnv replays a seed; without it the seed is drawn.
	nemesisSeedEnv = "PROBEGATE_NEMESIS_SEED"
	// nemesisDurationEnv is how long the faults go on (default 60s).
	nemesisDurationEnv = "PROBEGATE_NEMESIS_DURATION"
)

// defaultNemesisDuration is the run of `make test`.
const defaultNemesisDuration = 60 * time.Second

// nemesisBackends and nemesisMinAvailable make a budget of two.
const (
	nemesisBackends     = 6
	nemesisMinAvailable = 4
)

// nemesisFaults are the faults the nemesis draws from.
func nemesisFaults() []string {
	return []string{"cut", "stop", "leader", "quorum", "quorum-restart", "delete-key", "garbage-key", "ghost-views", "skew", "restart"}
}

// nemesisTTLs are the ttls of the grants: none, and two that end during
// the run.
func nemesisTTLs() []time.Duration {
	return []time.Duration{0, 2 * time.Second, 5 * time.Second}
}

// nemesisResult is what one run counted.
type nemesisResult struct {
	operations, faults      int
	grants, refusals        int
	unavailable, unanswered int
	violations              int
	messages                []string
	convergence             []time.Duration
	faultCounts             map[string]int
}

// nemesisSettings reads the seed and the duration from the environment.
func nemesisSettings(t testing.TB) (uint64, time.Duration) {
	t.Helper()
	seed := rand.Uint64()
	if v := os.Getenv(nemesisSeedEnv); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want an unsigned integer", nemesisSeedEnv, v)
		}
		seed = s
	}
	d := defaultNemesisDuration
	if v := os.Getenv(nemesisDurationEnv); v != "" {
		parsed, err := time.ParseDuration(v)
		if err != nil || parsed <= 0 {
			t.Fatalf("%s=%q: want a positive duration such as 60s or 10m", nemesisDurationEnv, v)
		}
		d = parsed
	}
	return seed, d
}

// TestNemesis runs the nemesis and fails on any breach of the invariant or
// a replica that did not converge after a heal, naming the seed.
func TestNemesis(t *testing.T) {
	seed, duration := nemesisSettings(t)
	t.Logf("nemesis seed %d for %s (replay with %s=%d)", seed, duration, nemesisSeedEnv, seed)
	res := runNemesis(t, seed, duration)
	t.Logf("nemesis seed %d: %s", seed, res.summary())
	if res.violations > 0 {
		t.Errorf("nemesis seed %d: %d violations (replay with %s=%d):\n%s", seed, res.violations, nemesisSeedEnv, seed, strings.Join(res.messages, "\n"))
	}
}

// BenchmarkNemesis runs the nemesis once and reports its counts and the
// convergence after heal.
func BenchmarkNemesis(b *testing.B) {
	seed, duration := nemesisSettings(b)
	for range b.N {
		res := runNemesis(b, seed, duration)
		b.ReportMetric(float64(res.operations), "operations")
		b.ReportMetric(float64(res.faults), "faults")
		b.ReportMetric(float64(res.grants), "grants")
		b.ReportMetric(float64(res.refusals), "refusals")
		b.ReportMetric(float64(res.violations), "violations")
		b.ReportMetric(percentile(res.convergence, 99).Seconds()*1e3, "converge-p99-ms")
		fmt.Printf("nemesis seed %d for %s: %s\n", seed, duration, res.summary())
		if res.violations > 0 {
			b.Fatalf("nemesis seed %d: %d violations (replay with %s=%d):\n%s", seed, res.violations, nemesisSeedEnv, seed, strings.Join(res.messages, "\n"))
		}
	}
}

func (r nemesisResult) summary() string {
	return fmt.Sprintf("%d operations, %d faults %v, %d grants, %d refusals, %d unavailable, %d unanswered, %d violations, convergence after heal p50 %s p99 %s (%d heals)",
		r.operations, r.faults, r.faultCounts, r.grants, r.refusals, r.unavailable, r.unanswered, r.violations,
		percentile(r.convergence, 50).Round(time.Millisecond), percentile(r.convergence, 99).Round(time.Millisecond), len(r.convergence))
}

// nemesis is one run's rig, its random source and its counts.
type nemesis struct {
	t   testing.TB
	rig *faultRig
	rng *rand.Rand
	res nemesisResult
}

// runNemesis runs faults for duration, heals everything, and checks the
// history.
func runNemesis(t testing.TB, seed uint64, duration time.Duration) nemesisResult {
	urls := make([]string, nemesisBackends)
	for i := range urls {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
		t.Cleanup(srv.Close)
		urls[i] = srv.URL
	}
	probing := "health_probe: {interval: 200ms, timeout: 100ms, successes: 1}\n"
	rig := startRig(t, "/probegate/nemesis", fmt.Sprintf("{min_available: %d}", nemesisMinAvailable), probing, urls,
		nemesisBackends-nemesisMinAvailable)
	n := &nemesis{t: t, rig: rig, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		res: nemesisResult{faultCounts: map[string]int{}}}
	start := time.Now()
	// Bounded in count as well as in time: a step lasts at least 300 ms.
	for step := 0; step < int(duration/(300*time.Millisecond))+1 && time.Since(start) < duration; step++ {
		n.step()
	}
	took, ok := rig.history.waitConverged(rig.replicas, 10*time.Second)
	if !ok {
		n.breach("the replicas did not agree with the store within 10s of the last heal")
	}
	n.res.convergence = append(n.res.convergence, took)
	msgs, count := rig.history.violations(20)
	n.res.violations += count
	n.res.messages = append(n.res.messages, msgs...)
	if n.res.violations > 0 {
		t.Log(rig.history.story())
	}
	return n.res
}

// breach records a violation found outside the history.
func (n *nemesis) breach(format string, args ...any) {
	n.res.violations++
	n.res.messages = append(n.res.messages, fmt.Sprintf(format, args...))
}

// step injects one fault, sends requests while it lasts, heals it and
// measures how long the replicas take to agree with the store again.
func (n *nemesis) step() {
	faults := nemesisFaults()
	kind := faults[n.rng.IntN(len(faults))]
	r := n.rig.replicas[n.rng.IntN(len(n.rig.replicas))]
	rounds := 2 + n.rng.IntN(5)
	n.res.faults++
	n.res.faultCounts[kind]++
	n.t.Logf("nemesis fault %d: %s on %s for %d rounds", n.res.faults, kind, r.name, rounds)
	n.rig.history.note("fault %d: %s on %s", n.res.faults, kind, r.name)
	heal := n.inject(kind, r)
	for range rounds {
		n.round()
	}
	heal()
	n.rig.history.note("fault %d healed", n.res.faults)
	took, ok := n.rig.history.waitConverged(n.rig.replicas, 10*time.Second)
	if !ok {
		n.breach("after healing %s on %s, the replicas did not agree with the store within 10s", kind, r.name)
	}
	n.t.Logf("nemesis fault %d healed: the replicas agreed with the store %s later", n.res.faults, took.Round(time.Millisecond))
	n.res.convergence = append(n.res.convergence, took)
	n.writesWork(kind)
	n.round()
}

// writesWork asks a random replica, with the fault healed and nothing
// else in flight, for a 2-second entry of a backend not in maintenance:
// the answer must be a grant or the budget's refusal, never a store
// error or a contention that outlived the fault.
func (n *nemesis) writesWork(kind string) {
	r := n.rig.replicas[n.rng.IntN(len(n.rig.replicas))]
	first := n.rng.IntN(nemesisBackends)
	inForce := n.rig.history.inForce()
	backend := ""
	for i := range nemesisBackends {
		if b := fmt.Sprintf("b%d", (first+i)%nemesisBackends); !slices.Contains(inForce, b) {
			backend = b
			break
		}
	}
	if backend == "" {
		return
	}
	code, body := n.rig.history.grant(r, backend, 2*time.Second)
	// A replica restarted a moment ago has not judged its backends yet
	// (their first probe comes within an interval) and says so: it is
	// asked again, a bounded number of times.
	for try := 0; try < 20 && code == http.StatusServiceUnavailable && strings.Contains(body, "not yet probed"); try++ {
		n.count(true, code)
		time.Sleep(100 * time.Millisecond)
		code, body = n.rig.history.grant(r, backend, 2*time.Second)
	}
	n.count(true, code)
	if code != http.StatusOK && (code != http.StatusTooManyRequests || !strings.Contains(body, "disruptions_allowed")) {
		n.breach("after healing %s, POST %s on %s answered %d %s; want a grant or the budget's refusal", kind, backend, r.name, code, body)
	}
}

// count counts one request's answer.
func (n *nemesis) count(grant bool, code int) {
	n.res.operations++
	switch {
	case code == 0:
		n.res.unanswered++
	case code == http.StatusServiceUnavailable:
		n.res.unavailable++
	case grant && code == http.StatusOK:
		n.res.grants++
	case grant && code == http.StatusTooManyRequests:
		n.res.refusals++
	}
}

// inject starts one fault and returns its heal.
func (n *nemesis) inject(kind string, r *replica) (heal func()) {
	rig, h := n.rig, n.rig.history
	key := rig.prefix + "/maintenance"
	switch kind {
	case "cut":
		healed := h.faultOn(r.name)
		r.cutOff()
		return func() { r.heal(); healed() }
	case "stop":
		healed := h.faultOn(r.name)
		r.stop()
		return func() { r.cont(); healed() }
	case "leader":
		rig.cluster.kill(rig.cluster.leader(rig.etcd))
		return rig.cluster.restore
	case "quorum":
		healed := h.faultOn(names(rig.replicas)...)
		rig.cluster.loseQuorum(n.rng.IntN(len(rig.cluster.members)))
		return func() { rig.cluster.restore(); healed() }
	case "quorum-restart":
		// A replica restarted while the store is away must serve what it
		// saved.
		healed := h.faultOn(names(rig.replicas)...)
		rig.cluster.loseQuorum(n.rng.IntN(len(rig.cluster.members)))
		r.restart()
		return func() { rig.cluster.restore(); healed() }
	case "delete-key":
		h.handEnd()
		etcdDel(n.t, rig.etcd, key)
		return func() {}
	case "garbage-key":
		etcdPut(n.t, rig.etcd, key, `{"maintenance": [{"backend": 42`)
		return func() { h.handEnd(); etcdDel(n.t, rig.etcd, key) }
	case "ghost-views":
		views := rig.prefix + "/replicas/"
		etcdPut(n.t, rig.etcd, views+"ghost", ghostView("ghost", 0))
		etcdPut(n.t, rig.etcd, views+"impostor", ghostView(r.name, 32<<10))
		return func() {
			etcdDel(n.t, rig.etcd, views+"ghost")
			etcdDel(n.t, rig.etcd, views+"impostor")
		}
	case "skew":
		offset := []string{"--testing.clock-offset=20m", "--testing.clock-offset=-20m"}[n.rng.IntN(2)]
		healed := h.faultOn(r.name)
		r.restart(offset)
		healed()
		return func() {
			healed := h.faultOn(r.name)
			r.restart()
			healed()
		}
	case "restart":
		healed := h.faultOn(r.name)
		r.kill()
		return func() { r.start(); healed() }
	}
	n.t.Fatalf("unknown fault %q", kind)
	return nil
}

// round sends one to three concurrent requests, each a grant or an end of
// a random backend on a random replica, then waits a random while.
func (n *nemesis) round() {
	type op struct {
		r       *replica
		grant   bool
		backend string
		ttl     time.Duration
	}
	ttls := nemesisTTLs()
	ops := make([]op, 1+n.rng.IntN(3))
	for i := range ops {
		ops[i] = op{r: n.rig.replicas[n.rng.IntN(len(n.rig.replicas))], grant: n.rng.IntN(3) > 0,
			backend: fmt.Sprintf("b%d", n.rng.IntN(nemesisBackends)), ttl: ttls[n.rng.IntN(len(ttls))]}
	}
	pause := time.Duration(100+n.rng.IntN(300)) * time.Millisecond
	codes := make([]int, len(ops))
	var wg sync.WaitGroup
	for i, o := range ops {
		wg.Go(func() {
			if o.grant {
				codes[i], _ = n.rig.history.grant(o.r, o.backend, o.ttl)
			} else {
				codes[i], _ = n.rig.history.end(o.r, o.backend)
			}
		})
	}
	wg.Wait()
	for i, c := range codes {
		n.count(ops[i].grant, c)
	}
	time.Sleep(pause)
}

// names are the replicas' names.
func names(replicas []*replica) []string {
	out := make([]string, len(replicas))
	for i, r := range replicas {
		out[i] = r.name
	}
	return out
}

package e2e

import (
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/probegate/probegate/collector/fleet"
)

// The shared probing tests: five replicas on a real three-member etcd
// cluster probe loopback backends (probedBackend counts every probe that
// reaches one), each backend from two of them, its vantage points; a
// replica whose path to some backends must break runs in a network
// namespace of its own (netns_test.go). The probe timing is rigProbing's:
// every 500ms, out after 2 failures, back after 1 success.

const (
	sharedVantagePoints = 2
	// viewLease is how long a replica's view, and the verdicts it
	// publishes under it, outlive the replica; viewRead is how often each
	// replica reads its peers' views. A replica killed is gone from its
	// peers' assignment as soon as its lease ends: the end deletes its
	// verdicts, which the store's watch brings at once, and a replica
	// seeing them all gone reads the views then. A replica falls back to
	// local probing within viewLease of losing the store.
	viewLease = 10 * time.Second
	viewRead  = time.Second
	// leaseExpiryCheck is how often etcd's leader looks for expired
	// leases: a lease outlives its ttl by up to that much.
	leaseExpiryCheck = 500 * time.Millisecond
	// loadedSlack is what a bound measured on a loaded two-core machine
	// is allowed beyond its arithmetic: five probegates, three etcd
	// members and the test share the two cores.
	loadedSlack = 500 * time.Millisecond
)

// sharedFleet is a real three-member etcd cluster and the replicas r0, r1,
// … on it, which probe the backends b0, b1, … .
type sharedFleet struct {
	t        *testing.T
	cluster  *etcdCluster
	prefix   string
	backends []*probedBackend
	replicas []*replica
	// urls are the backend URLs of each replica (forwarders, for one in a
	// namespace), and agents the agent listener of each that has one,
	// by replica name.
	urls   map[string][]string
	agents map[string]string
}

func newSharedFleet(t *testing.T, prefix string, backends []*probedBackend) *sharedFleet {
	t.Helper()
	return &sharedFleet{t: t, cluster: startEtcdCluster(t, 3), prefix: prefix, backends: backends,
		urls: map[string][]string{}, agents: map[string]string{}}
}

// fleetSize is how many replicas the shared probing tests run.
const fleetSize = 5

// startHostFleet starts fleetSize replicas on the host, shared probing on
// or off, with agent listeners when agent is set.
func startHostFleet(t *testing.T, prefix string, backends []*probedBackend, shared, agent bool) *sharedFleet {
	t.Helper()
	f := newSharedFleet(t, prefix, backends)
	for range fleetSize {
		f.addHost(shared, agent)
	}
	f.start()
	return f
}

// fleetNames are the names of the replicas of a fleet of fleetSize.
func fleetNames() []string {
	names := make([]string, fleetSize)
	for i := range names {
		names[i] = fmt.Sprintf("r%d", i)
	}
	return names
}

// sharedProbingConfig is a replica configuration's probe timing and its
// probing block, shared probing on or off.
func sharedProbingConfig(shared bool) string {
	return rigProbing + fmt.Sprintf("probing: {shared: {enabled: %t, vantage_points: %d}}\n", shared, sharedVantagePoints)
}

// addHost adds a replica on the host that probes the backends directly,
// with an agent listener when agent is set.
func (f *sharedFleet) addHost(shared, agent bool) *replica {
	f.t.Helper()
	name := fmt.Sprintf("r%d", len(f.replicas))
	urls := backendURLsOf(f.backends)
	r := newReplica(f.t, f.cluster, name, f.prefix, "{min_available: 1}", sharedProbingConfig(shared), urls)
	if agent {
		f.agents[name] = freeAddr(f.t)
		r.placed = []string{"--web.agent-listen-address=" + f.agents[name]}
	}
	f.urls[name] = urls
	f.replicas = append(f.replicas, r)
	return r
}

// addIn adds a replica inside ns, cut from the backends whose index is in
// cut: it reaches those through ns's cut address.
func (f *sharedFleet) addIn(ns *netns, shared bool, cut func(i int) bool) *replica {
	f.t.Helper()
	name := fmt.Sprintf("r%d", len(f.replicas))
	urls := make([]string, len(f.backends))
	for i, b := range f.backends {
		urls[i] = "http://" + ns.forward(f.t, strings.TrimPrefix(b.URL, "http://"), cut(i))
	}
	r := ns.newReplica(f.t, f.cluster, name, f.prefix, "{min_available: 1}", sharedProbingConfig(shared), urls)
	f.urls[name] = urls
	f.replicas = append(f.replicas, r)
	return r
}

// start starts every replica, one after the other.
func (f *sharedFleet) start() {
	f.t.Helper()
	for _, r := range f.replicas {
		r.start()
	}
}

// restartShared rewrites every replica's configuration with shared
// probing on or off and restarts it, keeping its saved state.
func (f *sharedFleet) restartShared(shared bool) {
	f.t.Helper()
	for _, r := range f.replicas {
		r.config = proxiedConfig(f.t, r.proxies, f.prefix, "{min_available: 1}", sharedProbingConfig(shared), f.urls[r.name])
		r.restart()
	}
}

// names are the replicas' names.
func replicaNamesOf(replicas []*replica) []string {
	out := make([]string, len(replicas))
	for i, r := range replicas {
		out[i] = r.name
	}
	return out
}

// vantagePlan is each backend's vantage points among the replicas named,
// by the rendezvous hashing every replica computes, sorted by name.
func vantagePlan(replicas []string, backends int) map[string][]string {
	members := fleet.NewMembers(replicas)
	plan := map[string][]string{}
	for i := range backends {
		name := fmt.Sprintf("b%d", i)
		plan[name] = members.Assign(nil, name, sharedVantagePoints)
		slices.Sort(plan[name])
	}
	return plan
}

// sharedHealthz is the part of /healthz the shared probing tests read.
type sharedHealthz struct {
	Probing  string          `json:"probing"`
	Backends []sharedBackend `json:"backends"`
}

type sharedBackend struct {
	Name          string         `json:"name"`
	State         string         `json:"state"`
	InService     bool           `json:"in_service"`
	Verified      bool           `json:"verified"`
	Verdict       string         `json:"verdict"`
	VantagePoints []vantagePoint `json:"vantage_points"`
}

type vantagePoint struct {
	Replica    string `json:"replica"`
	State      string `json:"state"`
	Since      string `json:"since"`
	Dissenting bool   `json:"dissenting"`
}

// getSharedHealthz is a replica's probing mode and its backends by name.
func getSharedHealthz(t testing.TB, base string) (string, map[string]sharedBackend) {
	t.Helper()
	var h sharedHealthz
	getJSON(t, base+"/healthz", &h)
	backends := map[string]sharedBackend{}
	for _, b := range h.Backends {
		backends[b.Name] = b
	}
	return h.Probing, backends
}

// vantageReplicas are the replicas a backend's vantage points name,
// sorted.
func (b sharedBackend) vantageReplicas() []string {
	out := make([]string, len(b.VantagePoints))
	for i, vp := range b.VantagePoints {
		out[i] = vp.Replica
	}
	slices.Sort(out)
	return out
}

// vantage is the backend's vantage point of replica, and whether it has
// one.
func (b sharedBackend) vantage(replica string) (vantagePoint, bool) {
	i := slices.IndexFunc(b.VantagePoints, func(vp vantagePoint) bool { return vp.Replica == replica })
	if i < 0 {
		return vantagePoint{}, false
	}
	return b.VantagePoints[i], true
}

// waitUntil polls cond every 50ms until it reports "" (it holds) or the
// deadline passes; then it fails the test with what cond last reported.
// It returns how long that took.
func waitUntil(t testing.TB, deadline time.Duration, what string, cond func() string) time.Duration {
	t.Helper()
	start := time.Now()
	var why string
	held := false
	defer func() {
		if !held {
			t.Logf("%s: last seen: %s", what, why)
		}
	}()
	waitFor(t, deadline, what, func() bool { why = cond(); return why == "" })
	held = true
	return time.Since(start)
}

// settled reports "" when every one of the replicas probes shared, holds
// the assignment the live replicas' names give and, for every backend,
// the state want gives (healthy unless said), in service unless
// unhealthy, by the shared verdict; otherwise what differs first.
func (f *sharedFleet) settled(replicas []*replica, want map[string]string) string {
	plan := vantagePlan(replicaNamesOf(replicas), len(f.backends))
	assigned := 0.0
	for _, r := range replicas {
		probing, backends := getSharedHealthz(f.t, r.base)
		if probing != "shared" {
			return fmt.Sprintf("%s probes %q", r.name, probing)
		}
		for name, vps := range plan {
			b := backends[name]
			state := cmpOr(want[name], "healthy")
			if got := b.vantageReplicas(); !slices.Equal(got, vps) {
				return fmt.Sprintf("%s: %s has the vantage points %v, want %v", r.name, name, got, vps)
			}
			if b.State != state || b.InService != (state != "unhealthy") || b.Verdict != "shared" {
				return fmt.Sprintf("%s: %s is %+v, want %s by the shared verdict", r.name, name, b, state)
			}
		}
		assigned += metricValue(f.t, r.base, "probegate_shared_assigned_backends")
	}
	if want := float64(sharedVantagePoints * len(f.backends)); assigned != want {
		return fmt.Sprintf("the replicas' shares sum to %v backends, want %v", assigned, want)
	}
	return ""
}

// cmpOr is a, or b when a is empty.
func cmpOr(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

// waitSettled waits until the replicas have settled (settled) and
// returns how long that took.
func (f *sharedFleet) waitSettled(replicas []*replica, want map[string]string, within time.Duration) time.Duration {
	f.t.Helper()
	return waitUntil(f.t, within, "the replicas settled in shared probing", func() string { return f.settled(replicas, want) })
}

// outOfService is every backend out of service on some replica, as
// replica:backend.
func outOfService(t testing.TB, replicas []*replica) []string {
	t.Helper()
	var out []string
	for _, r := range replicas {
		_, backends := getSharedHealthz(t, r.base)
		for name, b := range backends {
			if !b.InService {
				out = append(out, r.name+":"+name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// holdAllInService fails the test if a backend is out of service on any
// of the replicas at any time during d, sampled every 100ms.
func holdAllInService(t *testing.T, replicas []*replica, d time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if out := outOfService(t, replicas); len(out) > 0 {
			t.Fatalf("out of service: %v; want every backend in service throughout", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// probeWindow is how many intervals the probes reaching the backends
// are counted over.
const probeWindow = 20

// requireProbesPerInterval counts the probes reaching the backends over
// probeWindow intervals and fails the test unless they are what probers
// replicas probing each backend once an interval send: probers × backends
// per interval. Each pair of a backend and a replica probing it sends
// probeWindow probes in the window, or one more or one fewer when its
// grid point falls at an edge of the window and the probe comes a little
// early or late: no backend may get more than probers × (probeWindow + 1),
// and the total may exceed its due by 1% (16 probes of 1,600 with 80 due
// an interval; measured, those edges give a few either way). It checks
// beside that the replicas' own count of their probes
// (probegate_probes_total, summed) agrees with what reached the backends.
func requireProbesPerInterval(t *testing.T, replicas []*replica, backends []*probedBackend, what string, probers int) {
	t.Helper()
	before := ownProbes(t, replicas)
	counts := probesDuring(backends, probeWindow*rigInterval)
	after, counted := ownProbes(t, replicas), 0.0
	for i := range replicas {
		counted += (after[i].probes - before[i].probes) * float64(rigInterval) / float64(after[i].at.Sub(before[i].at))
	}
	got := float64(sumInts(counts)) / probeWindow
	due := float64(probers * len(backends))
	most := slices.Max(counts)
	t.Logf("%s: %.1f probes reach the %d backends per interval (due %v), at most %d one backend in %d intervals; the replicas count %.1f of their own",
		what, got, len(backends), due, most, probeWindow, counted)
	if got > 1.01*due || got < 0.95*due {
		t.Errorf("%s: %.1f probes per interval, want %v (%d replicas probing each of %d backends)", what, got, due, probers, len(backends))
	}
	if limit := int64(probers * (probeWindow + 1)); most > limit {
		t.Errorf("%s: a backend got %d probes in %d intervals, want at most %d from its %d probers: %v", what, most, probeWindow, limit, probers, counts)
	}
	// The windows differ by the times the metrics and the backends were
	// read at, and each replica's count is a rate over its own window: a
	// few probes either way.
	if math.Abs(counted-got) > 0.05*got {
		t.Errorf("%s: the replicas count %.1f probes of their own per interval (probegate_probes_total), the backends saw %.1f", what, counted, got)
	}
}

// probesTotalSeries is one backend's series of probegate_probes_total.
var probesTotalSeries = regexp.MustCompile(`(?m)^probegate_probes_total\{backend="[^"]*"\} (\S+)$`)

// probesAt is a replica's count of its own probes and when it was read.
type probesAt struct {
	probes float64
	at     time.Time
}

// ownProbes is each replica's probegate_probes_total summed over the
// backends: the probes it sent itself.
func ownProbes(t testing.TB, replicas []*replica) []probesAt {
	t.Helper()
	counts := make([]probesAt, len(replicas))
	for i, r := range replicas {
		body := getBody(t, r.base+"/metrics")
		counts[i].at = time.Now()
		for _, m := range probesTotalSeries.FindAllStringSubmatch(body, -1) {
			v, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				t.Fatal(err)
			}
			counts[i].probes += v
		}
	}
	return counts
}

// TestSharedProbingHalvesProbesAndEjectsTogether: five replicas × 40
// backends send 200 probes per interval without shared probing and at
// most 80 with it (two vantage points each); a backend that dies is out of
// service on every replica within failures × interval + interval,
// the replicas that are not its vantage points included.
func TestSharedProbingHalvesProbesAndEjectsTogether(t *testing.T) {
	backends := newProbedBackends(t, 40)
	f := startHostFleet(t, "/probegate/shared-probes", backends, false, false)
	waitUntil(t, 15*time.Second, "every replica judged every backend healthy", func() string {
		for _, r := range f.replicas {
			for name, b := range getHealthz(t, r.base) {
				if b.State != "healthy" {
					return fmt.Sprintf("%s: %s is %s", r.name, name, b.State)
				}
			}
		}
		return ""
	})
	requireProbesPerInterval(t, f.replicas, backends, "shared probing off", fleetSize)

	f.restartShared(true)
	took := f.waitSettled(f.replicas, nil, 30*time.Second)
	t.Logf("every replica in shared probing %v after the last restart", took.Round(time.Millisecond))
	requireProbesPerInterval(t, f.replicas, backends, "shared probing on", sharedVantagePoints)
	for _, r := range f.replicas {
		shared := metricValue(t, r.base, `probegate_probing_mode{mode="shared"}`)
		local := metricValue(t, r.base, `probegate_probing_mode{mode="local"}`)
		if shared != 1 || local != 0 {
			t.Errorf("%s: probegate_probing_mode shared %v, local %v; want 1 and 0", r.name, shared, local)
		}
	}

	// b7 dies: out of service on every replica, its vantage points by
	// their own probes, the others by their verdicts.
	const dead = "b7"
	backends[7].Close()
	died := time.Now()
	tookBy := map[string]time.Duration{}
	waitUntil(t, 10*time.Second, dead+" out of service on every replica", func() string {
		for _, r := range f.replicas {
			if _, ok := tookBy[r.name]; ok {
				continue
			}
			if _, h := getSharedHealthz(t, r.base); h[dead].State == "unhealthy" && !h[dead].InService {
				tookBy[r.name] = time.Since(died)
			}
		}
		if len(tookBy) < len(f.replicas) {
			return fmt.Sprintf("out of service after %v on %v", time.Since(died), tookBy)
		}
		return ""
	})
	vantage := vantagePlan(replicaNamesOf(f.replicas), len(backends))[dead]
	slowest := slices.Max(slices.Collect(maps.Values(tookBy)))
	bound := rigFailures*rigInterval + rigInterval
	t.Logf("%s out of service after %v (vantage points %v; failures × interval + interval = %v)", dead, tookBy, vantage, bound)
	// The verdicts reach the other replicas by the store's watch, not at
	// the next read of the views: the bound holds for them too.
	if limit := bound + loadedSlack; slowest > limit {
		t.Errorf("%s out of service on the last replica %v after it died, want within %v (failures × interval + interval + %v of slack)",
			dead, slowest, limit, loadedSlack)
	}
}

// TestSharedProbingCutReplicaEjectsNothing: one replica of five, in a
// network namespace of its own, is cut from 10 of 40 backends (HAProxy's
// own checks in that namespace mark those 10 DOWN): no backend goes out
// of service on any replica, and the cut replica is named, by
// probegate_vantage_disagreements_total, probegate_vantage_dissents and
// /healthz, on every replica. Half the 10 are backends the cut replica is
// a vantage point of, where it dissents; of the other half it publishes
// nothing.
func TestSharedProbingCutReplicaEjectsNothing(t *testing.T) {
	backends := newProbedBackends(t, 40)
	f := newSharedFleet(t, "/probegate/shared-cut", backends)
	for range fleetSize - 1 {
		f.addHost(true, false)
	}
	cutName := fleetNames()[fleetSize-1]
	plan := vantagePlan(fleetNames(), len(backends))
	cutFrom := map[int]bool{}
	var dissented, unprobed []string
	for i := range backends {
		name := fmt.Sprintf("b%d", i)
		if probes := slices.Contains(plan[name], cutName); probes && len(dissented) < 5 {
			dissented = append(dissented, name)
			cutFrom[i] = true
		} else if !probes && len(unprobed) < 5 {
			unprobed = append(unprobed, name)
			cutFrom[i] = true
		}
	}
	if len(dissented) < 5 {
		t.Fatalf("%s is a vantage point of %v only: rename the backends", cutName, dissented)
	}
	ns := newNetns(t)
	cut := f.addIn(ns, true, func(i int) bool { return cutFrom[i] })
	f.start()
	took := f.waitSettled(f.replicas, nil, 30*time.Second)
	t.Logf("settled %v after the start; %s is cut from %v, which it probes, and from %v, which it does not", took.Round(time.Millisecond), cut.name, dissented, unprobed)

	// HAProxy's own checks from the cut replica's host mark the 10 DOWN.
	checks := startNamespacedHAProxy(t, ns, f.urls[cut.name])

	holdAllInService(t, f.replicas, 3*rigInterval+3*time.Second)
	waitUntil(t, 10*time.Second, "HAProxy's own checks in the namespace mark the 10 cut backends DOWN and the rest UP", func() string {
		servers := haproxyServers(http.DefaultClient, checks, "httpchk")
		for i := range backends {
			name := fmt.Sprintf("b%d", i)
			want := "UP"
			if cutFrom[i] {
				want = "DOWN"
			}
			if got := servers[name]["status"]; !strings.HasPrefix(got, want) {
				return fmt.Sprintf("%s is %q", name, got)
			}
		}
		return ""
	})
	for _, r := range f.replicas {
		if n := metricValue(t, r.base, fmt.Sprintf(`probegate_vantage_disagreements_total{replica=%q}`, cut.name)); n <= 0 {
			t.Errorf("%s: probegate_vantage_disagreements_total{replica=%q} = %v, want the cut replica counted", r.name, cut.name, n)
		}
		if n := metricValue(t, r.base, fmt.Sprintf(`probegate_vantage_dissents{replica=%q}`, cut.name)); n != float64(len(dissented)) {
			t.Errorf("%s: probegate_vantage_dissents{replica=%q} = %v, want %d (%v)", r.name, cut.name, n, len(dissented), dissented)
		}
		_, h := getSharedHealthz(t, r.base)
		for _, name := range dissented {
			vp, _ := h[name].vantage(cut.name)
			if vp.State != "unhealthy" || !vp.Dissenting {
				t.Errorf("%s: /healthz shows %s's vantage point %s as %+v, want unhealthy and dissenting", r.name, name, cut.name, vp)
			}
			for _, other := range h[name].VantagePoints {
				if other.Replica != cut.name && (other.Dissenting || other.State != "healthy") {
					t.Errorf("%s: /healthz shows %s's vantage point %+v, want healthy and not dissenting", r.name, name, other)
				}
			}
		}
	}
	holdAllInService(t, f.replicas, time.Second)
}

// startNamespacedHAProxy runs HAProxy inside ns with its own HTTP check
// of /healthz (every 250ms, down after 2) on a server per URL, named b0,
// b1, … in the backend "httpchk", and returns its statistics' URL.
func startNamespacedHAProxy(t *testing.T, ns *netns, urls []string) string {
	t.Helper()
	bin := requireTool(t, "haproxy")
	stats := ns.listenAddr()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, `global
    maxconn 1000

defaults
    mode http
    timeout connect 1s
    timeout client 10s
    timeout server 10s
    timeout check 300ms

frontend stats
    bind %s
    stats enable
    stats uri /stats

backend httpchk
    option httpchk GET /healthz
    http-check expect status 200
    default-server inter 250ms fall 2 rise 1
`, stats)
	for i, u := range urls {
		fmt.Fprintf(&cfg, "    server b%d %s check\n", i, strings.TrimPrefix(u, "http://"))
	}
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	startProcess(t, "haproxy", exec.Command("ip", append(ns.via()[1:], bin, "-f", path, "-db")...))
	return "http://" + stats + "/stats"
}

// TestSharedProbingFallsBackWithoutStore: with every etcd member killed,
// every replica probes locally within one view lease and a read, and no
// backend leaves service meanwhile; with etcd back they share again and
// the probes fall back to at most 80 per interval.
func TestSharedProbingFallsBackWithoutStore(t *testing.T) {
	backends := newProbedBackends(t, 40)
	f := startHostFleet(t, "/probegate/shared-store", backends, true, false)
	f.waitSettled(f.replicas, nil, 30*time.Second)

	for i := range f.cluster.members {
		f.cluster.kill(i)
	}
	stopped := time.Now()
	localAfter := map[string]time.Duration{}
	waitUntil(t, viewLease+10*time.Second, "every replica probing locally", func() string {
		if out := outOfService(t, f.replicas); len(out) > 0 {
			t.Fatalf("out of service while the store is gone: %v", out)
		}
		for _, r := range f.replicas {
			if _, ok := localAfter[r.name]; ok {
				continue
			}
			if probing, _ := getSharedHealthz(t, r.base); probing == "local" {
				localAfter[r.name] = time.Since(stopped)
			}
		}
		if len(localAfter) < len(f.replicas) {
			return fmt.Sprintf("local after %v: %v", time.Since(stopped), localAfter)
		}
		return ""
	})
	slowest := slices.Max(slices.Collect(maps.Values(localAfter)))
	t.Logf("every etcd member killed: the replicas probe locally after %v", localAfter)
	if limit := viewLease + loadedSlack; slowest > limit {
		t.Errorf("the last replica probed locally %v after the store went, want within %v (the view lease and %v of slack)", slowest, limit, loadedSlack)
	}
	for _, r := range f.replicas {
		if v := metricValue(t, r.base, `probegate_probing_mode{mode="local"}`); v != 1 {
			t.Errorf("%s: probegate_probing_mode{mode=\"local\"} = %v, want 1", r.name, v)
		}
	}
	requireProbesPerInterval(t, f.replicas, backends, "the store gone, every replica probing every backend", fleetSize)
	holdAllInService(t, f.replicas, time.Second)

	f.cluster.restore()
	took := f.waitSettled(f.replicas, nil, 30*time.Second)
	t.Logf("etcd back: every replica shares again %v after the cluster took writes", took.Round(time.Millisecond))
	if out := outOfService(t, f.replicas); len(out) > 0 {
		t.Errorf("out of service after the store came back: %v", out)
	}
	requireProbesPerInterval(t, f.replicas, backends, "etcd back, shared probing again", sharedVantagePoints)
}

// TestSharedProbingReassignsKilledReplicaKeepingLatch: a replica killed
// with SIGKILL hands its share to the others within the view lease, one
// interval, a read of the views and etcd's check of expired leases, and
// the latch of its backends survives the move. A wrong-path backend (its probe path refused from
// the start, never verified) stays probe_unsupported, in service,
// everywhere. A backend verified by its two vantage points alone, the
// killed replica one of them, whose probe path then refuses, is unhealthy
// by both (the latch makes refusals count) and stays out of service
// through the reassignment: its new vantage point, which never saw it
// answer, starts from the published verdict, latch included. Had it not
// inherited the latch it would call the backend probe_unsupported
// (refusals alone prove nothing about an unverified backend), and the
// backend would be back in service.
func TestSharedProbingReassignsKilledReplicaKeepingLatch(t *testing.T) {
	backends := newProbedBackends(t, 20)
	all := fleetNames()
	victimName := all[fleetSize-1]
	before, after := vantagePlan(all, len(backends)), vantagePlan(all[:fleetSize-1], len(backends))
	// wrongPath and latched are two backends the victim probes.
	var mine []string
	for i := range backends {
		if name := fmt.Sprintf("b%d", i); slices.Contains(before[name], victimName) {
			mine = append(mine, name)
		}
	}
	if len(mine) < 2 {
		t.Fatalf("%s is a vantage point of %v, want two backends at least: rename them", victimName, mine)
	}
	wrongPath, latched := mine[0], mine[1]
	index := func(name string) int { var i int; fmt.Sscanf(name, "b%d", &i); return i }
	newVantage := slices.DeleteFunc(slices.Clone(after[latched]), func(r string) bool { return slices.Contains(before[latched], r) })
	if len(newVantage) != 1 {
		t.Fatalf("%s's vantage points go from %v to %v: want one new", latched, before[latched], after[latched])
	}
	// Both refuse the probe path from the start, so that no replica,
	// probing every backend locally before the fleet shares, verifies
	// either.
	backends[index(wrongPath)].status.Store(http.StatusNotFound)
	backends[index(latched)].status.Store(http.StatusNotFound)
	f := startHostFleet(t, "/probegate/shared-kill", backends, true, false)
	victim, survivors := f.replicas[fleetSize-1], f.replicas[:fleetSize-1]
	unsupported := map[string]string{wrongPath: "probe_unsupported", latched: "probe_unsupported"}
	f.waitSettled(f.replicas, unsupported, 30*time.Second)

	// Now only latched's vantage points, the victim one of them, see its
	// probe path answer: they latch it verified.
	// Each has seen it answer once its own verdict is healthy (from
	// probe_unsupported only an ok result leads there).
	backends[index(latched)].status.Store(http.StatusOK)
	waitUntil(t, 5*time.Second, latched+" healthy on every replica by both its vantage points", func() string {
		for _, r := range f.replicas {
			_, h := getSharedHealthz(t, r.base)
			b := h[latched]
			if b.State != "healthy" || len(b.VantagePoints) != sharedVantagePoints || slices.ContainsFunc(b.VantagePoints, func(vp vantagePoint) bool { return vp.State != "healthy" }) {
				return fmt.Sprintf("%s: %+v", r.name, b)
			}
		}
		return ""
	})
	// Its probe path refuses now: verified, it is unhealthy by both its
	// vantage points after failures, out of service everywhere.
	backends[index(latched)].status.Store(http.StatusNotFound)
	final := map[string]string{wrongPath: "probe_unsupported", latched: "unhealthy"}
	f.waitSettled(f.replicas, final, rigFailures*rigInterval+5*time.Second)
	t.Logf("%s and %s probed by %v; %s's vantage points become %v once %s dies", wrongPath, latched, before[latched], latched, after[latched], victim.name)

	victim.kill()
	killed := time.Now()
	took := waitUntil(t, viewLease+10*time.Second, "the survivors settled without "+victim.name+", "+latched+" out of service throughout", func() string {
		for _, r := range survivors {
			if _, h := getSharedHealthz(t, r.base); h[latched].InService {
				t.Fatalf("%s: %s back in service during the reassignment: %+v", r.name, latched, h[latched])
			}
		}
		return f.settled(survivors, final)
	})
	// Its share is reassigned when each of its backends is probed by a
	// second replica again, its new vantage point beside the one left.
	covered := map[string]time.Duration{}
	waitUntil(t, 5*time.Second, "each backend of "+victim.name+" probed by two replicas again", func() string {
		for _, name := range mine {
			at, ok := backends[index(name)].secondProber(killed, rigInterval)
			if !ok {
				return name + " probed by one replica"
			}
			covered[name] = at.Sub(killed)
		}
		return ""
	})
	slowest := slices.Max(slices.Collect(maps.Values(covered)))
	bound := viewLease + rigInterval
	t.Logf("%s killed: its backends probed by two replicas again after %v; the survivors showed the new vantage points after %v (view lease + interval = %v, + etcd's check of expired leases %v)",
		victim.name, covered, took.Round(time.Millisecond), bound, leaseExpiryCheck)
	// etcd ends the lease at its next check of expired leases, which adds
	// to the bound; the peers read the views as soon as the lease's end
	// deletes the victim's verdicts, not at their next read.
	if limit := bound + leaseExpiryCheck + loadedSlack; slowest > limit {
		t.Errorf("%s's share reassigned %v after SIGKILL, want within %v (view lease + interval + etcd's check of expired leases + %v of slack)",
			victim.name, slowest, limit, loadedSlack)
	}

	// The new vantage point has probed the backend itself since (its
	// probes are among those counted above): for three intervals more,
	// its verdict, latch and all, stays unhealthy, and the backend out
	// of service everywhere.
	end := time.Now().Add(3 * rigInterval)
	for time.Now().Before(end) {
		for _, r := range survivors {
			_, h := getSharedHealthz(t, r.base)
			b := h[latched]
			if vp, _ := b.vantage(newVantage[0]); b.State != "unhealthy" || b.InService || vp.State != "unhealthy" {
				t.Fatalf("%s: %s is %+v, want out of service, unhealthy by its new vantage point %s too", r.name, latched, b, newVantage[0])
			}
			if b := h[wrongPath]; b.State != "probe_unsupported" || !b.InService {
				t.Fatalf("%s: %s is %+v, want probe_unsupported in service", r.name, wrongPath, b)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSharedProbingLendsOneVerdictToHAProxy: HAProxy with agent-check and
// no check of its own asks one replica, not a vantage point of the
// backend that dies, for all six servers: the dead one goes DOWN by its
// vantage points' verdicts, the wrong-path one stays UP (HAProxy's own
// check marks it DOWN beside it), every replica's agent gives the same
// answer for each backend, and a maintenance entry granted on another
// replica makes the server MAINT within 2 s.
func TestSharedProbingLendsOneVerdictToHAProxy(t *testing.T) {
	haproxyBin := requireTool(t, "haproxy")
	backends := newProbedBackends(t, 6)
	backends[0].status.Store(http.StatusNotFound)
	const wrongPath, dead = "b0", "b1"
	f := startHostFleet(t, "/probegate/shared-agent", backends, true, true)
	f.waitSettled(f.replicas, map[string]string{wrongPath: "probe_unsupported"}, 30*time.Second)
	plan := vantagePlan(replicaNamesOf(f.replicas), len(backends))
	asked := f.replicas[slices.IndexFunc(f.replicas, func(r *replica) bool { return !slices.Contains(plan[dead], r.name) })]

	names := make([]string, len(backends))
	for i := range names {
		names[i] = fmt.Sprintf("b%d", i)
	}
	_, stats := startAgentHAProxy(t, haproxyBin, names, backendURLsOf(backends), f.agents[asked.name])
	waitUntil(t, 10*time.Second, "HAProxy: every server up by the agent, the wrong-path one DOWN by its own check", func() string {
		agent, checked := haproxyServers(http.DefaultClient, stats, "agent"), haproxyServers(http.DefaultClient, stats, "httpchk")
		for _, name := range names {
			if !agentServerUp(agent[name]) {
				return fmt.Sprintf("agent: %s is %q, last %q", name, agent[name]["status"], agent[name]["last_agt"])
			}
		}
		if checked[wrongPath]["status"] != "DOWN" {
			return fmt.Sprintf("httpchk: %s is %q", wrongPath, checked[wrongPath]["status"])
		}
		return ""
	})

	backends[1].Close()
	died := time.Now()
	bound := rigFailures*rigInterval + agentInter
	took := waitUntil(t, bound+10*time.Second, "HAProxy: the dead backend DOWN by the agent", func() string {
		if got := haproxyServers(http.DefaultClient, stats, "agent")[dead]["status"]; !strings.HasPrefix(got, "DOWN") {
			return got
		}
		return ""
	})
	t.Logf("%s DOWN in HAProxy %v after it died, by %s, not one of its vantage points %v (failures × interval + agent-inter = %v)",
		dead, time.Since(died).Round(time.Millisecond), asked.name, plan[dead], bound)
	if took > bound+loadedSlack {
		t.Errorf("%s DOWN in HAProxy %v after it died, want within %v", dead, took, bound+loadedSlack)
	}
	if !agentServerUp(haproxyServers(http.DefaultClient, stats, "agent")[wrongPath]) {
		t.Errorf("HAProxy took the wrong-path backend out: %v", haproxyServers(http.DefaultClient, stats, "agent")[wrongPath])
	}

	// Every replica's agent answers the same for each backend.
	time.Sleep(viewRead)
	for _, name := range names {
		want := agentExchange(t, f.agents[asked.name], name+"\n")
		for _, r := range f.replicas {
			if got := agentExchange(t, f.agents[r.name], name+"\n"); got != want {
				t.Errorf("the agent of %s answers %q for %s, that of %s %q", r.name, got, name, asked.name, want)
			}
		}
		if name == dead && !strings.HasPrefix(want, "down") || name == wrongPath && want != "up ready\n" {
			t.Errorf("the agents answer %q for %s", want, name)
		}
	}

	// A maintenance entry granted on another replica reaches HAProxy
	// through the one it asks within 2 s, and its end brings the server
	// back.
	const maint = "b3"
	other := f.replicas[(slices.Index(f.replicas, asked)+1)%len(f.replicas)]
	if code, _, body := apiCall(t, "POST", other.admin+"/api/v1/backends/"+maint+"/maintenance", `{"reason":"shared agent test"}`); code != http.StatusOK {
		t.Fatalf("maintenance of %s on %s: %d %s", maint, other.name, code, body)
	}
	took = waitUntil(t, 5*time.Second, "HAProxy: the backend in maintenance MAINT", func() string {
		if got := haproxyServers(http.DefaultClient, stats, "agent")[maint]["status"]; !strings.HasPrefix(got, "MAINT") {
			return got
		}
		return ""
	})
	t.Logf("%s MAINT in HAProxy through %s %v after %s granted the entry", maint, asked.name, took.Round(time.Millisecond), other.name)
	if took > 2*time.Second {
		t.Errorf("%s MAINT in HAProxy %v after the entry, want within 2s", maint, took)
	}
	if code, _, body := apiCall(t, "DELETE", other.admin+"/api/v1/backends/"+maint+"/maintenance", ""); code != http.StatusOK {
		t.Fatalf("end of %s's maintenance on %s: %d %s", maint, other.name, code, body)
	}
	waitUntil(t, 5*time.Second, "HAProxy: the backend out of maintenance up again", func() string {
		if cols := haproxyServers(http.DefaultClient, stats, "agent")[maint]; !agentServerUp(cols) {
			return fmt.Sprintf("%q, last %q", cols["status"], cols["last_agt"])
		}
		return ""
	})
}

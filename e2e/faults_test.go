package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/probegate/probegate/collector/maintenance"
)

// The fault tests: each puts three replicas on a real three-member etcd
// cluster, injects one fault a production cluster sees, asserts the
// behaviour that fault must not break, and holds the whole run to the
// invariant (history_test.go).

// faultRig is one fault test's cluster, replicas and history.
type faultRig struct {
	cluster  *etcdCluster
	etcd     *clientv3.Client
	prefix   string
	replicas []*replica
	history  *history
}

// startRig starts a three-member cluster and three replicas r0, r1, r2 of
// one configuration, the flags of replica i being flags[i] (if any), and
// starts recording. allowed is what the budget allows with every backend
// in service.
func startRig(t testing.TB, prefix, readiness, extra string, backends []string, allowed int, flags ...[]string) *faultRig {
	t.Helper()
	rig := &faultRig{cluster: startEtcdCluster(t, 3), prefix: prefix}
	rig.etcd = rig.cluster.client()
	for i := range 3 {
		r := newReplica(t, rig.cluster, fmt.Sprintf("r%d", i), prefix, readiness, extra, backends)
		if i < len(flags) {
			r.extra = flags[i]
		}
		r.start()
		rig.replicas = append(rig.replicas, r)
	}
	rig.history = startHistory(t, rig.cluster, prefix, allowed, rig.replicas)
	return rig
}

// shows is the backends a replica holds in maintenance now, sorted.
func (r *replica) shows(t testing.TB) []string {
	t.Helper()
	return inMaintenance(listBackends(t, r.admin))
}

// waitShow waits until each of the replicas shows exactly want in
// maintenance, and returns how long that took.
func waitShow(t *testing.T, replicas []*replica, want []string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	waitFor(t, within, fmt.Sprintf("replicas show %v in maintenance", want), func() bool {
		for _, r := range replicas {
			if !slices.Equal(r.shows(t), want) {
				return false
			}
		}
		return true
	})
	return time.Since(start)
}

// holdShowing asserts that each replica shows exactly want for the whole
// of d, sampled every 50 ms.
func holdShowing(t *testing.T, replicas []*replica, want []string, d time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		for _, r := range replicas {
			if got := r.shows(t); !slices.Equal(got, want) {
				t.Fatalf("%s shows %v in maintenance, want %v throughout", r.name, got, want)
			}
		}
		time.Sleep(sampleEvery)
	}
}

// mustGrant asks r for maintenance of backend and fails unless it is
// granted.
func (rig *faultRig) mustGrant(t *testing.T, r *replica, backend string, ttl time.Duration) {
	t.Helper()
	if code, body := rig.history.grant(r, backend, ttl); code != http.StatusOK {
		t.Fatalf("POST %s on %s: %d %s", backend, r.name, code, body)
	}
}

// requireConverged waits until every replica agrees with the store and
// reports it healthy, and fails the test if that takes longer than within
// since what.
func (rig *faultRig) requireConverged(t *testing.T, within time.Duration, what string) time.Duration {
	t.Helper()
	took, ok := rig.history.waitConverged(rig.replicas, within)
	if !ok {
		t.Fatalf("the replicas did not agree with the store within %s of %s", within, what)
	}
	return took
}

// TestFaultReplicaCutFromStore: a replica cut from every etcd member by
// the proxy, while the others write, keeps serving the entries it had,
// answers 503 naming the store to a DELETE of an entry it never saw (and
// the CLI says so and fails), grants nothing, and converges once healed;
// the entry it was asked to end stays in force.
func TestFaultReplicaCutFromStore(t *testing.T) {
	rig := startRig(t, "/probegate/cut", "{min_available: 1}", unprobed, unprobedURLs(4), 3)
	r0, r1, r2 := rig.replicas[0], rig.replicas[1], rig.replicas[2]
	rig.mustGrant(t, r0, "b0", 0)
	waitShow(t, rig.replicas, []string{"b0"}, time.Second)

	heal := rig.history.faultOn(r2.name)
	r2.cutOff()
	rig.mustGrant(t, r0, "b1", 0)
	if code, body := rig.history.end(r1, "b0"); code != http.StatusOK {
		t.Fatalf("DELETE b0 on r1 while r2 is cut: %d %s", code, body)
	}
	waitShow(t, rig.replicas[:2], []string{"b1"}, time.Second)

	code, body := rig.history.end(r2, "b1")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "etcd") {
		t.Errorf("DELETE on the cut replica of an entry it never saw: %d %s; want 503 naming the store", code, body)
	}
	if exit, out := cli(t, r2.admin, "stop", "b1"); exit == 0 || strings.Contains(out, "not in maintenance") {
		t.Errorf("probegate maintenance stop b1 on the cut replica: exit %d, %q; want a failure naming the store", exit, out)
	}
	if code, body := rig.history.grant(r2, "b2", 0); code != http.StatusServiceUnavailable {
		t.Errorf("POST on the cut replica: %d %s; want 503", code, body)
	}
	if code, body := rig.history.end(r2, "b0"); code != http.StatusServiceUnavailable {
		t.Errorf("DELETE on the cut replica of an entry it shows: %d %s; want 503", code, body)
	}
	// It serves what it last applied, and says the store is unreachable.
	waitFor(t, 10*time.Second, "the cut replica reports its store unhealthy", func() bool {
		return !listBackends(t, r2.admin).Store.Healthy
	})
	if got := r2.shows(t); !slices.Equal(got, []string{"b0"}) {
		t.Errorf("the cut replica shows %v in maintenance, want the [b0] it last applied", got)
	}

	r2.heal()
	heal()
	took := rig.requireConverged(t, 10*time.Second, "the heal")
	t.Logf("the healed replica agreed with the store %s after the heal", took.Round(time.Millisecond))
	if got := rig.history.inForce(); !slices.Equal(got, []string{"b1"}) {
		t.Errorf("the store holds %v in force, want [b1]: the cut replica's DELETE must change nothing", got)
	}
	rig.history.requireInvariant()
}

// TestFaultClockSkew: with one replica's clock 20 minutes ahead and one 20
// minutes behind, a 10-minute entry granted on the true clock is ended
// early by nobody, and 3-second entries granted on the skewed replicas
// take their backends out of service everywhere and end on time.
func TestFaultClockSkew(t *testing.T) {
	rig := startRig(t, "/probegate/skew", "{min_available: 1}", unprobed, unprobedURLs(4), 3,
		nil, []string{"--testing.clock-offset=20m"}, []string{"--testing.clock-offset=-20m"})
	r0, ahead, behind := rig.replicas[0], rig.replicas[1], rig.replicas[2]
	rig.mustGrant(t, r0, "b0", 10*time.Minute)
	waitShow(t, rig.replicas, []string{"b0"}, time.Second)

	const ttl = 3 * time.Second
	granted := time.Now()
	rig.mustGrant(t, behind, "b1", ttl)
	rig.mustGrant(t, ahead, "b2", ttl)
	waitShow(t, rig.replicas, []string{"b0", "b1", "b2"}, time.Second)
	// On time: not before the ttl, for no replica …
	holdShowing(t, rig.replicas, []string{"b0", "b1", "b2"}, time.Until(granted.Add(ttl-300*time.Millisecond)))
	// … and within a second after it, for every one.
	waitShow(t, rig.replicas, []string{"b0"}, time.Until(granted.Add(ttl+time.Second)))
	holdShowing(t, rig.replicas, []string{"b0"}, 2*time.Second)
	if got := rig.history.inForce(); !slices.Equal(got, []string{"b0"}) {
		t.Errorf("the store holds %v in force, want the 10-minute [b0]", got)
	}
	rig.history.requireInvariant()
}

// TestFaultEntriesKeyByHand: the entries key rewritten with garbage fails
// closed (the entries in force stay, no write lands on it, the replicas
// log it once per revision), but an entry whose lease ends meanwhile
// leaves service all the same, on a replica restarted from its saved
// state meanwhile too; deleted by hand it means "no entries", the
// next write creates it at once, and a replica restarted afterwards does
// not replay the key's old history.
func TestFaultEntriesKeyByHand(t *testing.T) {
	rig := startRig(t, "/probegate/keys", "{min_available: 1}", unprobed, unprobedURLs(4), 3)
	r0, r1, r2 := rig.replicas[0], rig.replicas[1], rig.replicas[2]
	key := rig.prefix + "/maintenance"
	rig.mustGrant(t, r0, "b0", 0)
	rig.mustGrant(t, r1, "b1", 0)
	// b3's entry is bound to a lease, which ends while the key is
	// corrupt: the lease keys alone decide removals, and they still do.
	rig.mustGrant(t, r2, "b3", 10*time.Second)
	waitShow(t, rig.replicas, []string{"b0", "b1", "b3"}, time.Second)

	const garbage = `{"maintenance": [{"backend": 42`
	rev := etcdPut(t, rig.etcd, key, garbage)
	if code, body := rig.history.grant(r2, "b2", 0); code == http.StatusOK {
		t.Errorf("POST over a corrupt entries key: %d %s; want a refusal", code, body)
	}
	if value, _, _ := etcdGet(t, rig.etcd, key); value != garbage {
		t.Errorf("the corrupt entries key was overwritten with %q", value)
	}
	// Named in the log once per revision: not again at every read.
	named := regexp.MustCompile(`(?m)^.*` + regexp.QuoteMeta(key) + `.*\b` + strconv.FormatInt(rev, 10) + `\b.*$`)
	logged := make([]int, len(rig.replicas))
	waitFor(t, 5*time.Second, "every replica names the corrupt key and its revision in its log", func() bool {
		for i, r := range rig.replicas {
			logged[i] = len(named.FindAllString(r.proc.output.String(), -1))
			if logged[i] == 0 {
				return false
			}
		}
		return true
	})
	holdShowing(t, rig.replicas, []string{"b0", "b1", "b3"}, 2*time.Second)
	for i, r := range rig.replicas {
		if lines := named.FindAllString(r.proc.output.String(), -1); len(lines) != logged[i] {
			t.Errorf("%s named the corrupt revision %d in %d log lines, then %d more while it stayed: %q",
				r.name, rev, logged[i], len(lines)-logged[i], lines)
		}
	}

	// r2 is down when b3's lease ends, and starts again while the key is
	// still corrupt: its saved state holds b3, which the lease keys end.
	down := rig.history.faultOn(r2.name)
	r2.kill()
	waitFor(t, 15*time.Second, "b3's lease key is gone", func() bool {
		_, _, found := etcdGet(t, rig.etcd, rig.prefix+"/leases/b3")
		return !found
	})
	waitShow(t, rig.replicas[:2], []string{"b0", "b1"}, time.Second)
	r2.start()
	down()
	// r2 serves its saved state from the start, b3 in it (the
	// conservative direction), until its first read of the store: the
	// lease keys that read carries end b3 although the entries document
	// cannot be decoded.
	waitShow(t, rig.replicas, []string{"b0", "b1"}, time.Second)
	holdShowing(t, rig.replicas, []string{"b0", "b1"}, time.Second)
	if value, _, _ := etcdGet(t, rig.etcd, key); value != garbage {
		t.Errorf("the corrupt entries key was overwritten with %q", value)
	}

	rig.history.handEnd()
	etcdDel(t, rig.etcd, key)
	waitShow(t, rig.replicas, nil, time.Second)
	// Restarted while the key is absent, a replica must not replay the
	// key's history (b0, b1, the garbage) into force.
	heal := rig.history.faultOn(r2.name)
	r2.restart()
	heal()
	holdShowing(t, rig.replicas, nil, 2*time.Second)
	// Not even for a moment: the restarted process never moved b0 or b1
	// into maintenance.
	for _, b := range []string{"b0", "b1"} {
		if n := transitionsInto(t, r2.base, b, "maintenance"); n != "0" {
			t.Errorf("the replica restarted after the deletion moved %s into maintenance %s times: it replayed the key's history", b, n)
		}
	}

	// The replicas that saw the deletion write at once, without force.
	if code, body := rig.history.grant(r1, "b2", 0); code != http.StatusOK {
		t.Fatalf("the first POST after the key was deleted: %d %s; want 200", code, body)
	}
	waitShow(t, rig.replicas, []string{"b2"}, time.Second)
	if code, body := rig.history.end(r0, "b2"); code != http.StatusOK {
		t.Fatalf("DELETE after the key was deleted: %d %s", code, body)
	}
	rig.mustGrant(t, r2, "b3", 0)
	waitShow(t, rig.replicas, []string{"b3"}, time.Second)
	rig.history.requireInvariant()
}

// transitionsInto is how many times the replica at base moved backend
// into the state to (probegate_backend_transitions_total), "0" when the
// series is missing.
func transitionsInto(t testing.TB, base, backend, to string) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^probegate_backend_transitions_total\{[^}]*backend="` + regexp.QuoteMeta(backend) + `"[^}]*to="` + to + `"[^}]*\} (\S+)$`)
	if m := re.FindStringSubmatch(getBody(t, base+"/metrics")); m != nil {
		return m[1]
	}
	return "0"
}

// viewsIgnored is the sum of probegate_replica_views_ignored_total over
// its reasons, -1 when the series is missing.
func viewsIgnored(t testing.TB, base string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^probegate_replica_views_ignored_total\{[^}]*\} (\S+)$`)
	sum := -1.0
	for _, m := range re.FindAllStringSubmatch(getBody(t, base+"/metrics"), -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		sum = max(sum, 0) + v
	}
	return sum
}

// TestFaultGhostReplicaViews: replica views written by hand — leaseless,
// under a lease but under another replica's name, and twenty of 1 MB —
// neither unready a replica nor inflate it: with every budget failing,
// every replica stays ready with a warning, lists only the real replicas,
// counts the ghosts as ignored, and keeps a sane resident size.
func TestFaultGhostReplicaViews(t *testing.T) {
	dead := "http://" + freeAddr(t)
	probing := "health_probe: {interval: 200ms, timeout: 100ms, failures: 1, successes: 1}\n"
	rig := startRig(t, "/probegate/ghost", "{min_available: 1, peer_relative: true}", probing, []string{dead}, 0)
	waitFor(t, 10*time.Second, "every replica ready with its budget failing", func() bool {
		for _, r := range rig.replicas {
			if code, status, _ := readyCheck(t, r.base); code != http.StatusOK || status != "warn" {
				return false
			}
		}
		return true
	})
	time.Sleep(2 * time.Second) // settle the resident size
	before := make([]int, len(rig.replicas))
	for i, r := range rig.replicas {
		before[i] = residentKiB(r.proc.cmd.Process.Pid)
	}

	views := rig.prefix + "/replicas/"
	etcdPut(t, rig.etcd, views+"ghost", ghostView("ghost", 0))
	lease, err := rig.etcd.Grant(t.Context(), 30)
	if err != nil {
		t.Fatal(err)
	}
	etcdPut(t, rig.etcd, views+"impostor", ghostView("r0", 0), clientv3.WithLease(lease.ID))
	for i := range 20 {
		etcdPut(t, rig.etcd, fmt.Sprintf("%sbig%02d", views, i), ghostView(fmt.Sprintf("big%02d", i), 1<<20))
	}

	end := time.Now().Add(5 * time.Second)
	for time.Now().Before(end) {
		for _, r := range rig.replicas {
			if code, status, output := readyCheck(t, r.base); code != http.StatusOK {
				t.Fatalf("%s /ready answered %d (%s: %s) with ghost views in the store", r.name, code, status, output)
			}
		}
		time.Sleep(sampleEvery)
	}
	for i, r := range rig.replicas {
		if n := viewsIgnored(t, r.base); n <= 0 {
			t.Errorf("%s: probegate_replica_views_ignored_total sums to %v, want the ghosts counted", r.name, n)
		}
		if names := replicaNames(t, r); !slices.Equal(names, []string{"r0", "r1", "r2"}) {
			t.Errorf("%s lists the replicas %v, want [r0 r1 r2]", r.name, names)
		}
		// Twenty 1 MB views must not be held: a bounded read keeps the
		// resident size within a few megabytes of what it was.
		after := residentKiB(r.proc.cmd.Process.Pid)
		t.Logf("%s resident size %d KiB before the ghosts, %d KiB after", r.name, before[i], after)
		if after-before[i] > 16<<10 {
			t.Errorf("%s grew from %d KiB to %d KiB resident with twenty 1 MB ghost views", r.name, before[i], after)
		}
	}
	rig.history.requireInvariant()
}

// replicaNames is what a replica's GET /api/v1/replicas lists, a stale
// view's name followed by " (stale)"; a stale view that says ready fails
// the test.
func replicaNames(t testing.TB, r *replica) []string {
	t.Helper()
	code, _, body := apiCall(t, "GET", r.admin+maintenance.ReplicasPath, "")
	var list maintenance.ReplicaList
	if err := json.Unmarshal([]byte(body), &list); code != http.StatusOK || err != nil {
		t.Fatalf("GET %s on %s: %d %s", maintenance.ReplicasPath, r.name, code, body)
	}
	names := make([]string, len(list.Replicas))
	for i, v := range list.Replicas {
		names[i] = v.Name
		if v.Stale {
			names[i] += " (stale)"
			if v.Ready {
				t.Fatalf("GET %s on %s: %s is stale and ready: %s", maintenance.ReplicasPath, r.name, v.Name, body)
			}
		}
	}
	return names
}

// TestFaultReplicaStoppedPastItsLease: a replica frozen by SIGSTOP longer
// than its view's lease is marked stale in its peers' lists, never ready,
// by the store's time;
// meanwhile its peers grant, end and expire entries. Continued, it catches
// up at once, writes nothing stale to the store, and publishes its view
// again.
func TestFaultReplicaStoppedPastItsLease(t *testing.T) {
	rig := startRig(t, "/probegate/stop", "{min_available: 1}", unprobed, unprobedURLs(4), 3)
	r0, r1, r2 := rig.replicas[0], rig.replicas[1], rig.replicas[2]
	rig.mustGrant(t, r0, "b0", 0)
	rig.mustGrant(t, r1, "b1", 4*time.Second)
	waitShow(t, rig.replicas, []string{"b0", "b1"}, time.Second)
	waitFor(t, 10*time.Second, "every replica published its view", func() bool {
		return slices.Equal(replicaNames(t, r0), []string{"r0", "r1", "r2"})
	})

	heal := rig.history.faultOn(r1.name)
	r1.stop()
	stopped := time.Now()
	rig.mustGrant(t, r0, "b2", 0)
	if code, body := rig.history.end(r2, "b0"); code != http.StatusOK {
		t.Fatalf("DELETE b0 on r2 while r1 is stopped: %d %s", code, body)
	}
	waitFor(t, 20*time.Second, "the stopped replica's view is stale in its peers' lists", func() bool {
		stale := []string{"r0", "r1 (stale)", "r2"}
		return slices.Equal(replicaNames(t, r0), stale) && slices.Equal(replicaNames(t, r2), stale)
	})
	t.Logf("the stopped replica went stale in its peers' lists %s after SIGSTOP", time.Since(stopped).Round(time.Millisecond))
	waitShow(t, []*replica{r0, r2}, []string{"b2"}, time.Second)
	_, revision, _ := etcdGet(t, rig.etcd, rig.prefix+"/maintenance")

	r1.cont()
	heal()
	took := rig.requireConverged(t, 2*time.Second, "SIGCONT")
	t.Logf("the continued replica agreed with the store %s after SIGCONT", took.Round(time.Millisecond))
	waitFor(t, 10*time.Second, "the continued replica publishes its view again", func() bool {
		return slices.Equal(replicaNames(t, r0), []string{"r0", "r1", "r2"})
	})
	if _, now, _ := etcdGet(t, rig.etcd, rig.prefix+"/maintenance"); now != revision {
		t.Errorf("the entries key moved from revision %d to %d after SIGCONT, with no request sent: a stale write", revision, now)
	}
	rig.history.requireInvariant()
}

// TestFaultLeaderKilledDuringBurst: 24 concurrent POSTs for distinct
// backends over three replicas, under a budget that allows two, while the
// etcd leader is killed: the store holds exactly the two the budget
// allows, every POST answered 200 among them, and every replica agrees.
func TestFaultLeaderKilledDuringBurst(t *testing.T) {
	rig := startRig(t, "/probegate/leader", "{min_available: 22}", unprobed, unprobedURLs(24), 2)
	leader := rig.cluster.leader(rig.etcd)
	codes := make([]int, 24)
	var start, wg sync.WaitGroup
	start.Add(1)
	for i := range codes {
		wg.Go(func() {
			start.Wait()
			codes[i], _ = rig.history.grant(rig.replicas[i%3], fmt.Sprintf("b%d", i), 0)
		})
	}
	wg.Go(func() {
		start.Wait()
		time.Sleep(5 * time.Millisecond)
		rig.cluster.kill(leader)
	})
	start.Done()
	wg.Wait()
	var granted []string
	for i, c := range codes {
		switch c {
		case http.StatusOK:
			granted = append(granted, fmt.Sprintf("b%d", i))
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		default:
			t.Errorf("POST b%d answered %d, want 200, 429 or 503", i, c)
		}
	}
	// Exactly the budget's number in force, every 200 among them. A POST
	// answered 503 may still have committed (any consensus store's timed
	// out write may); only such a one may stand for a missing 200.
	waitFor(t, 5*time.Second, "the store holds the budget's 2 entries", func() bool { return len(rig.history.inForce()) >= 2 })
	stored := rig.history.inForce()
	if len(stored) != 2 {
		t.Errorf("the store holds %v in force, want exactly the budget's 2 (answers %v)", stored, codes)
	}
	for _, b := range granted {
		if !slices.Contains(stored, b) {
			t.Errorf("%s was granted, and the store does not hold it (it holds %v)", b, stored)
		}
	}
	for _, b := range stored {
		var i int
		fmt.Sscanf(b, "b%d", &i)
		if codes[i] != http.StatusOK && codes[i] != http.StatusServiceUnavailable {
			t.Errorf("the store holds %s, whose POST answered %d", b, codes[i])
		}
	}
	slices.Sort(granted)
	took := waitShow(t, rig.replicas, stored, 5*time.Second)
	t.Logf("member m%d (the leader) killed during the burst; answered 200 %v, stored %v; every replica agreed after %s",
		leader, granted, stored, took.Round(time.Millisecond))
	rig.cluster.restore()
	rig.history.requireInvariant()
}

// TestFaultRestartDuringQuorumLoss: a replica restarted while the etcd
// cluster has lost its quorum serves the entries it saved (the backend in
// maintenance stays out of the fan-out), is ready on them, marked stale,
// once its first read of the store failed, refuses a DELETE with 503, and a
// replica with no saved state fails /ready with the maintenance_store
// check until the store answers; then both converge within a second.
func TestFaultRestartDuringQuorumLoss(t *testing.T) {
	backends := make([]*countingBackend, 4)
	urls := make([]string, 4)
	for i := range backends {
		backends[i] = newCountingBackend(t, statusAnswer(http.StatusOK))
		urls[i] = backends[i].URL
	}
	extra := "health_probe: {interval: 200ms, timeout: 100ms, successes: 1}\n" +
		"fanout: {enabled: true, timeout: 5s, expose_missing: true}\n"
	rig := startRig(t, "/probegate/quorum", "{min_available: 1}", extra, urls, 3)
	for _, r := range rig.replicas {
		waitHealthy(t, r.proc, 4)
	}
	r0, r2 := rig.replicas[0], rig.replicas[2]
	rig.mustGrant(t, r0, "b0", 0)
	waitShow(t, rig.replicas, []string{"b0"}, time.Second)

	heal := rig.history.faultOn("r0", "r1", "r2")
	rig.cluster.loseQuorum(0)
	r2.restart()
	if got := r2.shows(t); !slices.Equal(got, []string{"b0"}) {
		t.Errorf("the replica restarted during the quorum loss shows %v in maintenance, want its saved [b0]", got)
	}
	if s := listBackends(t, r2.admin).Store; s.Healthy {
		t.Errorf("the replica restarted during the quorum loss reports the store %+v, want unhealthy", s)
	}
	// Not ready until its first read of the store has failed, within
	// request_timeout (2s); then ready on its saved state.
	waitFor(t, 10*time.Second, "the replica restarted with saved state during the quorum loss is ready once its first read failed", func() bool {
		code, status, output := readyCheckNamed(t, r2.base, "maintenance_store")
		return code == http.StatusOK && status == "pass" && strings.HasPrefix(output, "stale")
	})
	hits := backends[0].hits.Load()
	code, header, body := fanoutGet(t, r2.base+"/fanout/", nil)
	if code != http.StatusOK || header.Get("X-Backends") != "3/4" || !strings.Contains(header.Get("X-Backends-Missing"), "b0=maintenance") {
		t.Errorf("fan-out on the restarted replica: %d, X-Backends %q, X-Backends-Missing %q (%s); want 200, 3/4, b0=maintenance",
			code, header.Get("X-Backends"), header.Get("X-Backends-Missing"), body)
	}
	if backends[0].hits.Load() != hits {
		t.Errorf("the fan-out of the restarted replica asked b0, which is in maintenance")
	}
	if code, body := rig.history.end(r2, "b0"); code != http.StatusServiceUnavailable {
		t.Errorf("DELETE during the quorum loss: %d %s; want 503", code, body)
	}

	fresh := newReplica(t, rig.cluster, "r3", rig.prefix, "{min_available: 1}", extra, urls)
	fresh.launch()
	waitFor(t, 10*time.Second, "the replica with no saved state fails /ready on maintenance_store", func() bool {
		resp, err := http.Get(fresh.base + "/ready")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var ready struct {
			Checks map[string]struct{ Status, Output string } `json:"checks"`
		}
		json.NewDecoder(resp.Body).Decode(&ready)
		c := ready.Checks["maintenance_store"]
		return resp.StatusCode == http.StatusServiceUnavailable && c.Status == "fail" && strings.Contains(c.Output, "not synced with the store yet")
	})

	rig.cluster.restore()
	back := time.Now()
	heal()
	waitFor(t, time.Second, "the replica with no saved state is ready and shows [b0] within 1s of the store's return", func() bool {
		resp, err := http.Get(fresh.base + "/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK && slices.Equal(fresh.shows(t), []string{"b0"})
	})
	rig.requireConverged(t, 5*time.Second, "the quorum's return")
	t.Logf("the fresh replica synced and every replica agreed with the store %s after the quorum returned", time.Since(back).Round(time.Millisecond))
	rig.history.requireInvariant()
}

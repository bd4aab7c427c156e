package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/probegate/probegate/collector/maintenance"
)

// unprobed makes every backend of a replica configuration unprobed.
const unprobed = "health_probe: {enabled: false}\n"

// listBackends is GET /api/v1/backends of one replica.
func listBackends(t testing.TB, base string) maintenance.List {
	t.Helper()
	code, _, body := apiCall(t, "GET", base+maintenance.BackendsPath, "")
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", maintenance.BackendsPath, code, body)
	}
	var l maintenance.List
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		t.Fatalf("GET %s: %v in %s", maintenance.BackendsPath, err, body)
	}
	return l
}

// inMaintenance names the backends a replica shows in maintenance, sorted.
func inMaintenance(l maintenance.List) []string {
	var names []string
	for _, b := range l.Backends {
		if b.State == "maintenance" {
			names = append(names, b.Name)
		}
	}
	slices.Sort(names)
	return names
}

// waitAgree waits until every replica shows exactly want in maintenance,
// and returns how long that took.
func waitAgree(t *testing.T, replicas []*probegateProcess, want []string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	waitFor(t, within, fmt.Sprintf("every replica shows %v in maintenance", want), func() bool {
		for _, r := range replicas {
			if !slices.Equal(inMaintenance(listBackends(t, r.admin)), want) {
				return false
			}
		}
		return true
	})
	return time.Since(start)
}

func post(t testing.TB, base, backend, body string) (int, http.Header, string) {
	t.Helper()
	return apiCall(t, "POST", base+maintenance.MaintenancePath(backend), body)
}

// TestReplicasShareOneBudget: 24 concurrent requests for 24 distinct
// backends, spread over three replicas under a budget that allows one
// disruption, grant exactly one; every replica shows that one within a
// second, and a replica killed with SIGKILL and started again shows it
// too.
func TestReplicasShareOneBudget(t *testing.T) {
	cluster := startEtcdCluster(t, 3)
	cfg := replicaConfig(t, cluster, "/probegate/budget", "{min_available: 23}", unprobed, unprobedURLs(24))
	replicas := startReplicas(t, cfg, cfg, cfg)

	codes := make([]int, 24)
	var start, wg sync.WaitGroup
	start.Add(1)
	for i := range codes {
		wg.Go(func() {
			start.Wait()
			codes[i], _, _ = post(t, replicas[i%3].admin, fmt.Sprintf("b%d", i), `{"reason":"race"}`)
		})
	}
	start.Done()
	wg.Wait()
	granted := []string{}
	count := map[int]int{}
	for i, c := range codes {
		count[c]++
		if c == http.StatusOK {
			granted = append(granted, fmt.Sprintf("b%d", i))
		}
	}
	if count[200] != 1 || count[429] != 23 {
		t.Fatalf("answers %v, want exactly one 200 and 23 429", codes)
	}
	lag := waitAgree(t, replicas, granted, time.Second)
	t.Logf("granted %v; every replica agreed after %s", granted, lag)

	// The list is the same whichever replica answers, store health included.
	for _, r := range replicas {
		l := listBackends(t, r.admin)
		if l.Store.Kind != "etcd" || !l.Store.Healthy || l.Readiness.DisruptionsAllowed != 0 {
			t.Errorf("%s: store %+v, readiness %+v", r.base, l.Store, l.Readiness)
		}
	}

	// kill -9 and a restart: the replica reads the same state back.
	victim := replicas[1]
	victim.cmd.Process.Kill()
	<-victim.done
	replicas[1] = startReplicas(t, cfg)[0]
	if got := inMaintenance(listBackends(t, replicas[1].admin)); !slices.Equal(got, granted) {
		t.Errorf("restarted replica shows %v in maintenance, want %v", got, granted)
	}

	// An end on one replica is seen by all within a second.
	if code, _, body := apiCall(t, "DELETE", replicas[2].admin+maintenance.MaintenancePath(granted[0]), ""); code != http.StatusOK {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	waitAgree(t, replicas, nil, time.Second)
}

// TestReplicasExpireTogether: a ttl ends the maintenance on every replica
// when the store's lease ends, whichever replica granted it: not before
// its until, and within a second and a half after it (etcd checks for
// expired leases twice a second, and a replica applies the end within a
// second of the store).
func TestReplicasExpireTogether(t *testing.T) {
	cluster := startEtcdCluster(t, 3)
	cfg := replicaConfig(t, cluster, "/probegate/ttl", "{min_available: 1}", unprobed, unprobedURLs(3))
	replicas := startReplicas(t, cfg, cfg, cfg)
	code, _, body := post(t, replicas[0].admin, "b1", `{"reason":"ttl","ttl":"3s"}`)
	if code != http.StatusOK {
		t.Fatalf("POST: %d %s", code, body)
	}
	var entered maintenance.Entered
	if err := json.Unmarshal([]byte(body), &entered); err != nil {
		t.Fatal(err)
	}
	waitAgree(t, replicas, []string{"b1"}, time.Second)
	until := entered.Maintenance.Until
	time.Sleep(time.Until(until) - 300*time.Millisecond)
	for _, r := range replicas {
		if got := inMaintenance(listBackends(t, r.admin)); !slices.Equal(got, []string{"b1"}) {
			t.Errorf("%s shows %v in maintenance 300ms before its until, want b1", r.base, got)
		}
	}
	waitAgree(t, replicas, nil, time.Until(until)+1500*time.Millisecond)
}

// TestReplicasThroughMemberLoss: with one etcd member of three killed,
// writes still succeed; with two, writes answer 503 within the request
// timeout, the entries in force stay and reads answer from the last known
// state, saying so; with the members back, the replicas converge without
// a restart, and a change again reaches all of them within a second.
func TestReplicasThroughMemberLoss(t *testing.T) {
	cluster := startEtcdCluster(t, 3)
	cfg := replicaConfig(t, cluster, "/probegate/faults", "{min_available: 1}", unprobed, unprobedURLs(4))
	replicas := startReplicas(t, cfg, cfg, cfg)

	cluster.kill(0)
	if code, _, body := post(t, replicas[0].admin, "b0", `{"reason":"one member down"}`); code != http.StatusOK {
		t.Fatalf("POST with one member down: %d %s", code, body)
	}
	waitAgree(t, replicas, []string{"b0"}, time.Second)

	cluster.kill(1)
	start := time.Now()
	code, header, body := post(t, replicas[1].admin, "b1", `{"reason":"two members down"}`)
	took := time.Since(start)
	if code != http.StatusServiceUnavailable || header.Get("Retry-After") == "" || !strings.Contains(body, "etcd") {
		t.Errorf("POST with two members down: %d Retry-After %q %s; want 503 naming the store", code, header.Get("Retry-After"), body)
	}
	if took > 2*time.Second+time.Second {
		t.Errorf("the refused write took %s, more than the 2s request timeout", took)
	}
	if code, _, body := apiCall(t, "DELETE", replicas[2].admin+maintenance.MaintenancePath("b0"), ""); code != http.StatusServiceUnavailable {
		t.Errorf("DELETE with two members down: %d %s, want 503", code, body)
	}
	waitFor(t, 10*time.Second, "every replica reports the store unhealthy", func() bool {
		for _, r := range replicas {
			if listBackends(t, r.admin).Store.Healthy {
				return false
			}
		}
		return true
	})
	for _, r := range replicas {
		if got := inMaintenance(listBackends(t, r.admin)); !slices.Equal(got, []string{"b0"}) {
			t.Errorf("%s shows %v in maintenance with the store down, want [b0]", r.base, got)
		}
	}

	cluster.start(0)
	cluster.start(1)
	cluster.waitHealthy(20 * time.Second)
	waitFor(t, 10*time.Second, "a write succeeds with the members back", func() bool {
		code, _, _ := apiCall(t, "DELETE", replicas[1].admin+maintenance.MaintenancePath("b0"), "")
		return code == http.StatusOK
	})
	// A replica whose watch broke with the quorum catches up by its next
	// read of the store, every 2s; from then on the watch is back, and a
	// change reaches every replica within a second again. The refused
	// write of b1 may have committed once the quorum returned, as a write
	// that timed out on any consensus store may: then every replica shows
	// it.
	var after []string
	waitFor(t, 5*time.Second, "every replica shows the same entries without b0", func() bool {
		after = inMaintenance(listBackends(t, replicas[0].admin))
		if slices.Contains(after, "b0") || (len(after) > 0 && !slices.Equal(after, []string{"b1"})) {
			return false
		}
		for _, r := range replicas[1:] {
			if !slices.Equal(inMaintenance(listBackends(t, r.admin)), after) {
				return false
			}
		}
		return true
	})
	for _, r := range replicas {
		if s := listBackends(t, r.admin).Store; !s.Healthy {
			t.Errorf("%s: store %+v after the members returned", r.base, s)
		}
	}
	time.Sleep(3 * time.Second)
	if code, _, body := post(t, replicas[2].admin, "b3", `{"reason":"after the outage"}`); code != http.StatusOK {
		t.Fatalf("POST after the outage: %d %s", code, body)
	}
	waitAgree(t, replicas, append(after, "b3"), time.Second)
}

// readyCheck is the /ready answer and the backends check in it.
func readyCheck(t *testing.T, base string) (int, string, string) {
	t.Helper()
	return readyCheckNamed(t, base, "backends")
}

// TestPeerRelativeReadiness: a replica whose budget fails while a peer's
// holds is not ready (its view is the worse one); when no replica's budget
// holds, every one stays ready with the check at warn, and says why in
// probegate_readiness_peer_override. The replica group budget
// (group_budget, a shard of two replicas) is weighed against the peers
// the same way: one shard dead for every replica does not withdraw them
// all.
func TestPeerRelativeReadiness(t *testing.T) {
	cluster := startEtcdCluster(t, 3)
	live := okBackend(t).URL
	liveShard := []string{okBackend(t).URL, okBackend(t).URL}
	dead := "http://" + freeAddr(t)
	deadShard := []string{"http://" + freeAddr(t), "http://" + freeAddr(t)}
	probing := "health_probe: {interval: 200ms, timeout: 100ms, failures: 1, successes: 1}\n"
	cfg := func(prefix, url string, shard []string) string {
		path := replicaConfig(t, cluster, prefix, "{min_available: 1, peer_relative: true, per_group: {min_available: 1}}", probing, []string{url})
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for i, u := range shard {
			if _, err := fmt.Fprintf(f, "  - {name: shard-%d, url: %q, group: shard}\n", i, u); err != nil {
				t.Fatal(err)
			}
		}
		return path
	}

	// One replica sees its backends dead, its peers see theirs alive.
	partitioned := startReplicas(t, cfg("/probegate/peers1", dead, deadShard), cfg("/probegate/peers1", live, liveShard),
		cfg("/probegate/peers1", live, liveShard))
	waitFor(t, 10*time.Second, "the partitioned replica fails /ready, its peers pass", func() bool {
		c0, _, _ := readyCheck(t, partitioned[0].base)
		c1, _, _ := readyCheck(t, partitioned[1].base)
		return c0 == http.StatusServiceUnavailable && c1 == http.StatusOK
	})
	for _, check := range []string{"backends", "group_budget"} {
		if _, status, output := readyCheckNamed(t, partitioned[0].base, check); status != "fail" || !strings.Contains(output, "r1") {
			t.Errorf("partitioned replica: check %s %s %q, want fail naming a peer whose budget holds", check, status, output)
		}
	}

	// Every replica sees the pool dead: they all stay ready, warning.
	outage := startReplicas(t, cfg("/probegate/peers2", dead, deadShard), cfg("/probegate/peers2", dead, deadShard),
		cfg("/probegate/peers2", dead, deadShard))
	waitFor(t, 10*time.Second, "every replica in the outage stays ready with a warning", func() bool {
		for _, r := range outage {
			for _, check := range []string{"backends", "group_budget"} {
				if code, status, _ := readyCheckNamed(t, r.base, check); code != http.StatusOK || status != "warn" {
					return false
				}
			}
		}
		return true
	})
	for _, r := range outage {
		if got := metricValue(t, r.base, "probegate_readiness_peer_override"); got != 1 {
			t.Errorf("%s: probegate_readiness_peer_override %v, want 1", r.base, got)
		}
	}
	// The views follow within the publication interval.
	waitFor(t, 5*time.Second, "every replica counts three ready replicas with budgets that do not hold", func() bool {
		for _, r := range outage {
			if metricValue(t, r.base, `probegate_replicas{state="ready"}`) != 3 {
				return false
			}
			code, _, body := apiCall(t, "GET", r.admin+maintenance.ReplicasPath, "")
			var list maintenance.ReplicaList
			if err := json.Unmarshal([]byte(body), &list); code != http.StatusOK || err != nil || len(list.Replicas) != 3 {
				t.Fatalf("GET %s: %d %s", maintenance.ReplicasPath, code, body)
			}
			for _, v := range list.Replicas {
				if !v.Ready || v.BudgetHolds || v.GroupsHold || v.Expected != 3 || v.InService != 0 {
					return false
				}
			}
		}
		return true
	})
}

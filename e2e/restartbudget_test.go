package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// serversUp counts the servers HAProxy has UP (a server going down,
// "UP 1/2", is still in service), and reports false when the statistics
// cannot be read.
func serversUp(h *haproxy, client *http.Client) (int, bool) {
	statuses, ok := h.serverStatuses(client)
	up := 0
	for _, s := range statuses {
		if strings.HasPrefix(s, "UP") {
			up++
		}
	}
	return up, ok
}

// upWatch samples HAProxy every 50ms and adds up the time it had fewer
// than two replicas UP.
type upWatch struct {
	mu      sync.Mutex
	below   time.Duration
	samples int
	unread  int
	fewest  int
}

// watchUp samples until ctx ends.
func watchUp(ctx context.Context, h *haproxy) *upWatch {
	w := &upWatch{fewest: 3}
	client := &http.Client{Timeout: time.Second}
	go func() {
		last, lastBelow := time.Now(), false
		ticker := time.NewTicker(50 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			up, ok := serversUp(h, client)
			now := time.Now()
			w.mu.Lock()
			if lastBelow {
				w.below += now.Sub(last)
			}
			if !ok {
				w.unread++
			} else {
				w.samples++
				w.fewest = min(w.fewest, up)
			}
			w.mu.Unlock()
			last, lastBelow = now, ok && up < 2
		}
	}()
	return w
}

func (w *upWatch) result() (below time.Duration, samples, unread, fewest int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.below, w.samples, w.unread, w.fewest
}

// TestRestartedReplicaSpendsNoUnseenBudget is the operator's incident:
// three replicas on a real etcd behind HAProxy, max_unavailable 2 with
// peer-relative readiness over six backends, one dead and one in
// maintenance, so that no disruption is allowed. One replica is
// restarted, and asked at once to put a healthy backend in maintenance.
// Its dead backend is still unknown there: counted as available, the
// request was granted, the other replicas' budgets broke, they failed
// /ready because the fresh replica's held, and HAProxy was down to one
// replica. The request must be refused, 503 "not yet probed" until the
// dead backend has a verdict and 429 after, and HAProxy must never have
// fewer than two replicas UP.
func TestRestartedReplicaSpendsNoUnseenBudget(t *testing.T) {
	cluster := startEtcdCluster(t, 3)
	urls := make([]string, 6)
	for i := range urls {
		urls[i] = okBackend(t).URL
	}
	urls[1] = "http://" + freeAddr(t) // dead: nothing listens
	probing := "health_probe: {interval: 1s, timeout: 500ms, failures: 3, successes: 1}\n"
	cfg := replicaConfig(t, cluster, "/probegate/restart", "{max_unavailable: 2, peer_relative: true}", probing, urls)

	type replicaAddrs struct{ main, admin, storage string }
	var addrs [3]replicaAddrs
	launch := func(i int) *probegateProcess {
		a := addrs[i]
		p := launchProbegate(t, a.main, "--config.file="+cfg, "--web.enable-admin-api", fmt.Sprintf("--replica.name=r%d", i),
			"--storage.path="+a.storage, "--web.admin-listen-address="+a.admin)
		p.waitServing(t)
		return p
	}
	var replicas [3]*probegateProcess
	for i := range replicas {
		addrs[i] = replicaAddrs{main: freeAddr(t), admin: freeAddr(t), storage: t.TempDir()}
		replicas[i] = launch(i)
	}
	judged := func(p *probegateProcess) bool {
		h := getHealthz(t, p.base)
		for i := range urls {
			want := "healthy"
			if i == 1 {
				want = "unhealthy"
			}
			if got := h[fmt.Sprintf("b%d", i)].State; got != want && got != "maintenance" {
				return false
			}
		}
		return true
	}
	waitFor(t, 15*time.Second, "every replica judging b1 dead and the rest healthy", func() bool {
		return judged(replicas[0]) && judged(replicas[1]) && judged(replicas[2])
	})
	if code, _, body := post(t, replicas[0].admin, "b0", `{"reason":"kernel"}`); code != http.StatusOK {
		t.Fatalf("b0's maintenance, with one disruption allowed: %d %s", code, body)
	}
	waitAgreeOn := func(want []string) {
		waitFor(t, 2*time.Second, fmt.Sprintf("every replica shows %v in maintenance", want), func() bool {
			for _, r := range replicas {
				if got := inMaintenance(listBackends(t, r.admin)); strings.Join(got, ",") != strings.Join(want, ",") {
					return false
				}
			}
			return true
		})
	}
	waitAgreeOn([]string{"b0"})
	if b := listBackends(t, replicas[0].admin).Readiness; b.CurrentHealthy != 4 || b.DesiredHealthy != 4 || b.DisruptionsAllowed != 0 {
		t.Fatalf("budget before the restart %+v, want current_healthy=4 desired_healthy=4 disruptions_allowed=0", b)
	}

	h := startHAProxy(t, addrs[0].main, addrs[1].main, addrs[2].main)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	watch := watchUp(ctx, h)

	// Restart r2 on the same addresses and state, and ask it at once.
	replicas[2].cmd.Process.Kill()
	<-replicas[2].done
	replicas[2] = launch(2)
	code, header, body := post(t, replicas[2].admin, "b2", `{"reason":"upgrade"}`)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "not yet probed") || !strings.Contains(body, "b1") {
		t.Errorf("maintenance start on the restarted replica: %d %s; want 503 not yet probed naming b1", code, body)
	}
	if header.Get("Retry-After") == "" {
		t.Errorf("the 503 has no Retry-After")
	}
	// Asked again until b1 is judged there: refused by the budget.
	deadline := time.Now().Add(10 * time.Second)
	for code == http.StatusServiceUnavailable && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		code, _, body = post(t, replicas[2].admin, "b2", `{"reason":"upgrade"}`)
	}
	if code != http.StatusTooManyRequests || !strings.Contains(body, "disruptions_allowed") {
		t.Errorf("maintenance start once b1 is judged: %d %s; want 429 with the budget", code, body)
	}
	// The budget holds for every replica and HAProxy keeps them: watch a
	// few more checks.
	time.Sleep(4 * time.Second)
	stop()
	below, samples, unread, fewest := watch.result()
	t.Logf("HAProxy sampled %d times (%d unreadable): fewest replicas UP %d, %s below two", samples, unread, fewest, below)
	if below != 0 {
		t.Errorf("HAProxy had fewer than two replicas UP for %s (fewest %d); want 0s", below, fewest)
	}
	if samples < 50 || unread > samples/10 {
		t.Errorf("HAProxy sampled %d times, %d unreadable: the watch did not run", samples, unread)
	}
	for _, r := range replicas {
		if got := inMaintenance(listBackends(t, r.admin)); strings.Join(got, ",") != "b0" {
			t.Errorf("%s shows %v in maintenance, want b0 alone", r.base, got)
		}
	}
}

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/probegate/probegate/collector/maintenance"
)

// groupCount and replicasPerGroup are the shape of the replica-group
// tests' pool: g0-0, g0-1, g1-0, … in groups g0 … g3.
const (
	groupCount       = 4
	replicasPerGroup = 2
)

// groupBackends starts groupCount × replicasPerGroup healthy loopback
// backends, by name.
func groupBackends(t *testing.T) map[string]*httptest.Server {
	t.Helper()
	servers := map[string]*httptest.Server{}
	for g := range groupCount {
		for r := range replicasPerGroup {
			servers[fmt.Sprintf("g%d-%d", g, r)] = okBackend(t)
		}
	}
	return servers
}

// groupsConfig writes a configuration of the backends in their groups,
// probed every 200ms, with readiness.per_group max_unavailable 1, the
// fan-out on, and extra (a maintenance block, say).
func groupsConfig(t *testing.T, servers map[string]*httptest.Server, extra string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("health_probe: {interval: 200ms, timeout: 100ms, successes: 1}\n")
	b.WriteString("readiness: {per_group: {max_unavailable: 1}}\nfanout: {enabled: true}\n")
	b.WriteString(extra + "backends:\n")
	for g := range groupCount {
		for r := range replicasPerGroup {
			name := fmt.Sprintf("g%d-%d", g, r)
			fmt.Fprintf(&b, "  - {name: %s, url: %q, group: g%d}\n", name, servers[name].URL, g)
		}
	}
	path := filepath.Join(t.TempDir(), "probegate.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// healthzGroup is one entry of /healthz's groups.
type healthzGroup struct {
	Name      string `json:"name"`
	Replicas  int    `json:"replicas"`
	InService int    `json:"in_service"`
	BudgetOK  bool   `json:"budget_ok"`
}

// healthzGroups is /healthz's groups of one replica.
func healthzGroups(t testing.TB, base string) []healthzGroup {
	t.Helper()
	var body struct {
		Groups []healthzGroup `json:"groups"`
	}
	if err := json.Unmarshal([]byte(getBody(t, base+"/healthz")), &body); err != nil {
		t.Fatal(err)
	}
	return body.Groups
}

// waitAllHealthy waits until a replica's probes judged every backend
// healthy.
func waitAllHealthy(t *testing.T, p *probegateProcess) {
	t.Helper()
	waitFor(t, 10*time.Second, "every backend healthy", func() bool {
		backends := getHealthz(t, p.base)
		for _, b := range backends {
			if b.State != "healthy" {
				return false
			}
		}
		return len(backends) == groupCount*replicasPerGroup
	})
}

// grantOnePerGroup sends a maintenance request for every backend at once,
// each to one of the replicas in turn, and checks that exactly one
// replica of each group is granted and every other request is refused
// with 429, naming its group.
func grantOnePerGroup(t *testing.T, replicas []*probegateProcess) []string {
	t.Helper()
	var names []string
	for g := range groupCount {
		for r := range replicasPerGroup {
			names = append(names, fmt.Sprintf("g%d-%d", g, r))
		}
	}
	codes, bodies := make([]int, len(names)), make([]string, len(names))
	var start, wg sync.WaitGroup
	start.Add(1)
	for i, name := range names {
		wg.Go(func() {
			start.Wait()
			codes[i], _, bodies[i] = post(t, replicas[i%len(replicas)].admin, name, `{"reason":"kernel"}`)
		})
	}
	start.Done()
	wg.Wait()
	granted := map[string]string{}
	for i, name := range names {
		group := name[:2]
		switch codes[i] {
		case http.StatusOK:
			if other, twice := granted[group]; twice {
				t.Errorf("both %s and %s of group %s granted", other, name, group)
			}
			granted[group] = name
		case http.StatusTooManyRequests:
			var refused maintenance.Refused
			if err := json.Unmarshal([]byte(bodies[i]), &refused); err != nil || refused.Group == nil || refused.Group.Name != group ||
				!strings.Contains(refused.Error, fmt.Sprintf("replica group %q", group)) {
				t.Errorf("%s refused with %s, want the budget of group %s named", name, bodies[i], group)
			}
		default:
			t.Errorf("%s: %d %s, want 200 or 429", name, codes[i], bodies[i])
		}
	}
	if len(granted) != groupCount {
		t.Fatalf("granted %v, want one replica of each of the %d groups", granted, groupCount)
	}
	var out []string
	for _, name := range granted {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// TestGroupBudgetAdmitsOneReplicaPerGroup: 4 groups × 2 real loopback
// backends under per_group.max_unavailable 1, the file store. Eight
// requests at once grant one replica of each group, and the others are
// 429 naming their group; a fifth request for any group is 429 naming it.
// /healthz and the metrics show each group on its last replica, /status
// lists the groups in headless Chromium, and when a group's last replica
// fails /ready fails its group_budget check naming the group.
func TestGroupBudgetAdmitsOneReplicaPerGroup(t *testing.T) {
	servers := groupBackends(t)
	p := startProbegate(t, "--config.file="+groupsConfig(t, servers, ""), "--web.enable-admin-api", "--storage.path="+t.TempDir())
	waitAllHealthy(t, p)
	if code, status, output := readyCheckNamed(t, p.base, "group_budget"); code != http.StatusOK || status != "pass" ||
		output != "4 of 4 replica groups have a budget, and every one holds" {
		t.Fatalf("/ready before any maintenance: %d, group_budget %s %q", code, status, output)
	}

	granted := grantOnePerGroup(t, []*probegateProcess{p})
	for g := range groupCount {
		name := fmt.Sprintf("g%d-1", g)
		if slices.Contains(granted, name) {
			name = fmt.Sprintf("g%d-0", g)
		}
		code, _, body := post(t, p.admin, name, `{"reason":"one more"}`)
		if code != http.StatusTooManyRequests || !strings.Contains(body, fmt.Sprintf(`"group":{"name":"g%d"`, g)) {
			t.Errorf("a second entry in g%d: %d %s, want 429 naming the group", g, code, body)
		}
	}
	for _, g := range healthzGroups(t, p.base) {
		if g.Replicas != 2 || g.InService != 1 || !g.BudgetOK {
			t.Errorf("/healthz group %+v, want 1 of 2 in service, its budget holding", g)
		}
	}
	for g := range groupCount {
		if v := metricValue(t, p.base, fmt.Sprintf(`probegate_group_in_service{group="g%d"}`, g)); v != 1 {
			t.Errorf("probegate_group_in_service of g%d is %v, want 1", g, v)
		}
	}

	dom := chromium(t, p.base+"/status?refresh=0", "--dump-dom")
	for g := range groupCount {
		if want := fmt.Sprintf(`<tr data-group="g%d" data-in-service="1" data-replicas="2" data-budget-ok="true"`, g); !bytes.Contains(dom, []byte(want)) {
			t.Errorf("the rendered /status lacks %s", want)
		}
	}

	// The last replica of a group fails: the group is below its budget.
	last := "g2-0"
	if granted[2] == last {
		last = "g2-1"
	}
	servers[last].Close()
	waitFor(t, 10*time.Second, "/ready failing group_budget", func() bool {
		code, status, _ := readyCheckNamed(t, p.base, "group_budget")
		return code == http.StatusServiceUnavailable && status == "fail"
	})
	if _, _, output := readyCheckNamed(t, p.base, "group_budget"); output != "replica groups below their budget: g2 (0 of 2 in service, 1 needed)" {
		t.Errorf("group_budget says %q, want g2 named", output)
	}
}

// readyCheckNamed is /ready's status code and the status and output of
// its check name.
func readyCheckNamed(t *testing.T, base, name string) (int, string, string) {
	t.Helper()
	resp, err := http.Get(base + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Checks map[string]struct{ Status, Output string } `json:"checks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	c := body.Checks[name]
	return resp.StatusCode, c.Status, c.Output
}

// TestGroupBudgetAcrossReplicas: the same per-group budget held by three
// probegate replicas on a real three-member etcd: requests for all eight
// backends at once, spread over the replicas, grant one replica of each
// group, the rest 429 naming their group, and every replica shows the
// same four entries.
func TestGroupBudgetAcrossReplicas(t *testing.T) {
	cluster := startEtcdCluster(t, 3)
	servers := groupBackends(t)
	extra := fmt.Sprintf("maintenance:\n  store: etcd\n  etcd: {endpoints: %s, prefix: /probegate/groups, request_timeout: 2s, dial_timeout: 2s}\n",
		cluster.endpoints())
	cfg := groupsConfig(t, servers, extra)
	replicas := startReplicas(t, cfg, cfg, cfg)
	for _, r := range replicas {
		waitAllHealthy(t, r)
	}
	granted := grantOnePerGroup(t, replicas)
	waitAgree(t, replicas, granted, time.Second)
	for _, r := range replicas {
		for _, g := range healthzGroups(t, r.base) {
			if g.InService != 1 || !g.BudgetOK {
				t.Errorf("%s: /healthz group %+v, want 1 in service, its budget holding", r.base, g)
			}
		}
	}
}

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The probe timing of the agent test: a dead backend is out of service
// after failures × interval, and HAProxy hears of it within one
// agent-inter more.
const (
	agentProbeInterval = 250 * time.Millisecond
	agentProbeFailures = 2
	agentInter         = 500 * time.Millisecond
)

// agentHAProxyConfig routes the frontend to the backend "agent", whose
// servers HAProxy judges by probegate's agent alone (agent-check and no
// check), and holds the same servers a second time in the backend
// "httpchk", judged by HAProxy's own HTTP check of the probe path, side
// by side.
const agentHAProxyConfig = `global
    maxconn 1000

defaults
    mode http
    timeout connect 1s
    timeout client 10s
    timeout server 10s
    timeout check 1s
    retries 0

frontend load
    bind %s
    default_backend agent

frontend stats
    bind %s
    stats enable
    stats uri /stats

backend agent
    balance roundrobin

backend httpchk
    balance roundrobin
    option httpchk GET /healthz
    http-check expect status 200
    default-server inter 250ms fall 2 rise 1
`

// agentServerUp: a server judged by the agent alone shows "no check"
// while it is up (HAProxy runs no check of its own), with the agent's
// last word "up".
func agentServerUp(cols map[string]string) bool {
	return cols["status"] == "no check" && strings.Contains(cols["last_agt"], "up")
}

// TestAgentLendsTheVerdictToHAProxy: HAProxy with agent-check and no
// check of its own routes to six loopback backends by probegate's
// verdicts. The backend whose probe path answers 404 stays up and gets
// traffic, while HAProxy's own HTTP check of the same server marks it
// DOWN beside it; a backend that dies goes DOWN within failures ×
// interval + agent-inter; a maintenance entry makes a backend MAINT within
// 2 s and it is back in service once the entry ends; wrk through HAProxy
// loses no request while a backend enters maintenance; and during
// probegate's drain window the agent still answers.
func TestAgentLendsTheVerdictToHAProxy(t *testing.T) {
	haproxyBin, wrkBin := requireTool(t, "haproxy"), requireTool(t, "wrk")
	var wrongPathRequests atomic.Int64
	backends := make([]*httptest.Server, 6)
	for i := range backends {
		wrongPath := i == 0
		backends[i] = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/healthz" {
				if wrongPath {
					http.NotFound(w, r)
				}
				return
			}
			if wrongPath {
				wrongPathRequests.Add(1)
			}
			io.WriteString(w, "ok\n")
		}))
		t.Cleanup(backends[i].Close)
	}
	names := []string{"wrong-path", "dead", "maint", "b4", "b5", "b6"}

	var cfg strings.Builder
	fmt.Fprintf(&cfg, "health_probe: {path: /healthz, interval: %s, timeout: 200ms, failures: %d, successes: 1}\n",
		agentProbeInterval, agentProbeFailures)
	cfg.WriteString("readiness: {min_available: 1}\ngate: {drain: 3s}\nbackends:\n")
	for i, b := range backends {
		fmt.Fprintf(&cfg, "  - {name: %s, url: %q}\n", names[i], b.URL)
	}
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "probegate.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	agentAddr := freeAddr(t)
	p := startProbegate(t, "--config.file="+cfgFile, "--storage.path="+filepath.Join(dir, "data"),
		"--web.enable-admin-api", "--web.agent-listen-address="+agentAddr)

	urls := make([]string, len(backends))
	for i, b := range backends {
		urls[i] = b.URL
	}
	front, statsURL := startAgentHAProxy(t, haproxyBin, names, urls, agentAddr)

	// Once probegate has judged every backend (the wrong-path one
	// probe_unsupported) and HAProxy has asked since, every server is up
	// by the agent, the wrong-path one included, while HAProxy's own
	// check of the same server holds it DOWN.
	waitFor(t, 10*time.Second, "probegate: every backend judged", func() bool {
		h := getHealthz(t, p.base)
		for _, name := range names {
			if want := map[bool]string{true: "probe_unsupported", false: "healthy"}[name == "wrong-path"]; h[name].State != want {
				return false
			}
		}
		return true
	})
	time.Sleep(2 * agentInter)
	waitFor(t, 10*time.Second, "HAProxy: every server up by the agent, wrong-path DOWN by its own check", func() bool {
		agent, checked := haproxyServers(http.DefaultClient, statsURL, "agent"), haproxyServers(http.DefaultClient, statsURL, "httpchk")
		for _, name := range names {
			if !agentServerUp(agent[name]) {
				return false
			}
		}
		return checked["wrong-path"]["status"] == "DOWN" && checked["b4"]["status"] == "UP"
	})
	before := wrongPathRequests.Load()
	for range 12 {
		resp, err := http.Get("http://" + front + "/")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("through HAProxy: %s", resp.Status)
		}
	}
	if got := wrongPathRequests.Load() - before; got == 0 {
		t.Error("HAProxy sent the wrong-path backend no request: it is not in service")
	}

	// The dead backend goes DOWN within failures × interval + agent-inter.
	// The bound is checked with a second of slack for a loaded machine;
	// the time taken is logged.
	backends[1].Close()
	died := time.Now()
	bound := agentProbeFailures*agentProbeInterval + agentInter
	waitFor(t, bound+5*time.Second, "HAProxy: the dead backend DOWN by the agent", func() bool {
		return strings.HasPrefix(haproxyServers(http.DefaultClient, statsURL, "agent")["dead"]["status"], "DOWN")
	})
	took := time.Since(died)
	t.Logf("the dead backend was DOWN in HAProxy %v after it died (failures × interval + agent-inter = %v)", took.Round(time.Millisecond), bound)
	if took > bound+time.Second {
		t.Errorf("the dead backend was DOWN after %v, want within %v", took, bound)
	}
	if desc := haproxyServers(http.DefaultClient, statsURL, "agent")["dead"]["last_agt"]; !strings.Contains(desc, "unhealthy") {
		t.Errorf("HAProxy shows the agent's last word for the dead backend as %q, want the reason", desc)
	}

	// wrk through HAProxy while a backend enters maintenance: no request
	// is lost.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	wrk := exec.CommandContext(ctx, wrkBin, "-t2", "-c8", "-d4s", "--timeout", "2s", "http://"+front+"/")
	var wrkOut strings.Builder
	wrk.Stdout, wrk.Stderr = &wrkOut, &wrkOut
	if err := wrk.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	code, _, body := apiCall(t, "POST", p.admin+"/api/v1/backends/maint/maintenance", `{"reason":"agent test"}`)
	if code != http.StatusOK {
		t.Fatalf("maintenance: %d %s", code, body)
	}
	entered := time.Now()
	waitFor(t, 5*time.Second, "HAProxy: the backend in maintenance MAINT", func() bool {
		return strings.HasPrefix(haproxyServers(http.DefaultClient, statsURL, "agent")["maint"]["status"], "MAINT")
	})
	if took := time.Since(entered); took > 2*time.Second {
		t.Errorf("MAINT in HAProxy %v after the maintenance entry, want within 2s", took)
	}
	if err := wrk.Wait(); err != nil {
		t.Fatalf("wrk: %v\n%s", err, wrkOut.String())
	}
	checkWrkLostNothing(t, wrkOut.String())

	// The entry ends: the backend is back in service in HAProxy after
	// its successes.
	if code, _, body := apiCall(t, "DELETE", p.admin+"/api/v1/backends/maint/maintenance", ""); code != http.StatusOK {
		t.Fatalf("end of maintenance: %d %s", code, body)
	}
	waitFor(t, 5*time.Second, "HAProxy: the backend out of maintenance up again", func() bool {
		return agentServerUp(haproxyServers(http.DefaultClient, statsURL, "agent")["maint"])
	})

	// A dead backend's maintenance ends: HAProxy shows it DOWN, not
	// still MAINT (a bare "down" would leave the agent's maintenance in
	// force).
	if code, _, body := apiCall(t, "POST", p.admin+"/api/v1/backends/dead/maintenance", `{"reason":"agent test"}`); code != http.StatusOK {
		t.Fatalf("maintenance of the dead backend: %d %s", code, body)
	}
	waitFor(t, 5*time.Second, "HAProxy: the dead backend MAINT", func() bool {
		return strings.HasPrefix(haproxyServers(http.DefaultClient, statsURL, "agent")["dead"]["status"], "MAINT")
	})
	if code, _, body := apiCall(t, "DELETE", p.admin+"/api/v1/backends/dead/maintenance", ""); code != http.StatusOK {
		t.Fatalf("end of the dead backend's maintenance: %d %s", code, body)
	}
	waitFor(t, 5*time.Second, "HAProxy: the dead backend DOWN again after its maintenance", func() bool {
		return strings.HasPrefix(haproxyServers(http.DefaultClient, statsURL, "agent")["dead"]["status"], "DOWN")
	})

	// A name no backend has gets no reply, counted; the verdicts were
	// counted by reply.
	if reply := agentExchange(t, agentAddr, "nobody\n"); reply != "" {
		t.Errorf("an unknown name got the reply %q", reply)
	}
	for _, reply := range []string{"up", "down", "maint", "unknown"} {
		if v := metricValue(t, p.base, `probegate_agent_requests_total{reply="`+reply+`"}`); v < 1 {
			t.Errorf("probegate_agent_requests_total{reply=%q} = %v, want at least 1", reply, v)
		}
	}

	// During the drain window the agent answers on: it speaks of the
	// backends, not of this replica.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "probegate draining", func() bool {
		resp, err := http.Get(p.base + "/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	if reply := agentExchange(t, agentAddr, "b4\n"); reply != "up ready\n" {
		t.Errorf("during the drain window the agent answered %q, want up ready", reply)
	}
}

// startAgentHAProxy runs HAProxy (agentHAProxyConfig) with the servers
// named names at urls, judged by the agent at agentAddr alone in the
// backend "agent" and by HAProxy's own check of /healthz in the backend
// "httpchk", and returns its frontend's address and its statistics' URL.
func startAgentHAProxy(t *testing.T, haproxyBin string, names, urls []string, agentAddr string) (front, statsURL string) {
	t.Helper()
	front, stats := freeAddr(t), freeAddr(t)
	agentHost, agentPort, err := net.SplitHostPort(agentAddr)
	if err != nil {
		t.Fatal(err)
	}
	text := fmt.Appendf(nil, agentHAProxyConfig, front, stats)
	var agentServers, checkedServers strings.Builder
	for i, u := range urls {
		addr := strings.TrimPrefix(u, "http://")
		fmt.Fprintf(&agentServers, "    server %s %s agent-check agent-addr %s agent-port %s agent-send \"%s\\n\" agent-inter %dms\n",
			names[i], addr, agentHost, agentPort, names[i], agentInter.Milliseconds())
		fmt.Fprintf(&checkedServers, "    server %s %s check\n", names[i], addr)
	}
	text = []byte(strings.Replace(strings.Replace(string(text),
		"backend agent\n    balance roundrobin\n", "backend agent\n    balance roundrobin\n"+agentServers.String(), 1),
		"    default-server inter 250ms fall 2 rise 1\n", "    default-server inter 250ms fall 2 rise 1\n"+checkedServers.String(), 1))
	haproxyCfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(haproxyCfg, text, 0o644); err != nil {
		t.Fatal(err)
	}
	startProcess(t, "haproxy", exec.Command(haproxyBin, "-f", haproxyCfg, "-db"))
	return front, "http://" + stats + "/stats"
}

// checkWrkLostNothing fails the test unless wrk's report shows requests
// done and none lost: no socket error and no answer but 2xx or 3xx.
func checkWrkLostNothing(t *testing.T, report string) {
	t.Helper()
	done := regexp.MustCompile(`(\d+) requests in`).FindStringSubmatch(report)
	if done == nil {
		t.Fatalf("wrk printed no request count:\n%s", report)
	}
	if n, _ := strconv.Atoi(done[1]); n == 0 {
		t.Fatalf("wrk sent no request:\n%s", report)
	}
	if strings.Contains(report, "Socket errors") || strings.Contains(report, "Non-2xx or 3xx") {
		t.Errorf("wrk lost requests while a backend entered maintenance:\n%s", report)
	}
	t.Logf("wrk through HAProxy:\n%s", report)
}

// agentExchange sends line to the agent listener and returns what it
// answered before closing.
func agentExchange(t *testing.T, addr, line string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, line); err != nil {
		t.Fatal(err)
	}
	reply, _ := io.ReadAll(c)
	return string(reply)
}

package e2e

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// haproxyConfig is HAProxy in front of probegate instances, checking
// /ready every 300ms, out after 2 failed checks, back after 1, and never
// retrying a request elsewhere: every request the draining instance
// mishandles reaches the client. Connections to the servers are kept alive
// and reused (HAProxy's default http-reuse safe).
const haproxyConfig = `global
    maxconn 1000
    log stderr format raw local0 info

defaults
    mode http
    log global
    option httplog
    timeout connect 1s
    timeout client 10s
    timeout server 10s
    timeout check 1s
    retries 0

frontend load
    bind %s
    default_backend probegate

frontend stats
    bind %s
    stats enable
    stats uri /stats

backend probegate
    balance roundrobin
    option httpchk GET /ready
    http-check expect status 200
    default-server inter 300 fall 2 rise 1
`

// haproxy is a running HAProxy with its frontend and stats addresses.
type haproxy struct {
	front string // http://host:port of the load frontend
	stats string // http://host:port/stats
}

// startHAProxy runs HAProxy in the foreground in front of the servers,
// named p1, p2, … in their order, and waits until it reports every one
// up.
func startHAProxy(t *testing.T, servers ...string) *haproxy {
	t.Helper()
	bin := requireTool(t, "haproxy")
	front, stats := freeAddr(t), freeAddr(t)
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	text := fmt.Appendf(nil, haproxyConfig, front, stats)
	for i, addr := range servers {
		text = fmt.Appendf(text, "    server p%d %s check\n", i+1, addr)
	}
	if err := os.WriteFile(cfg, text, 0o644); err != nil {
		t.Fatal(err)
	}
	startProcess(t, "haproxy", exec.Command(bin, "-f", cfg, "-db"))
	h := &haproxy{front: "http://" + front, stats: "http://" + stats + "/stats"}
	waitFor(t, 10*time.Second, "HAProxy reporting every server UP", func() bool {
		statuses, ok := h.serverStatuses(http.DefaultClient)
		if !ok {
			return false
		}
		for i := range servers {
			if statuses[fmt.Sprintf("p%d", i+1)] != "UP" {
				return false
			}
		}
		return true
	})
	return h
}

// serverStatus is a server's status column in HAProxy's CSV statistics
// (UP, DOWN, ...), or "" when they cannot be read.
func (h *haproxy) serverStatus(server string) string {
	statuses, _ := h.serverStatuses(http.DefaultClient)
	return statuses[server]
}

// serverStatuses is the status column of every server of the probegate
// backend in HAProxy's CSV statistics, by server name, and false when
// they cannot be read.
func (h *haproxy) serverStatuses(client *http.Client) (map[string]string, bool) {
	servers := haproxyServers(client, h.stats, "probegate")
	if servers == nil {
		return nil, false
	}
	statuses := map[string]string{}
	for name, cols := range servers {
		statuses[name] = cols["status"]
	}
	return statuses, true
}

// haproxyServers are the CSV statistics' columns of every server of one
// HAProxy backend, by server name, or nil when they cannot be read.
func haproxyServers(client *http.Client, stats, backend string) map[string]map[string]string {
	resp, err := client.Get(stats + ";csv")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	rows, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil || len(rows) == 0 {
		return nil
	}
	header := rows[0]
	header[0] = strings.TrimPrefix(header[0], "# ")
	servers := map[string]map[string]string{}
	for _, row := range rows[1:] {
		if len(row) < len(header) || row[0] != backend || row[1] == "BACKEND" || row[1] == "FRONTEND" {
			continue
		}
		cols := map[string]string{}
		for i, h := range header {
			cols[h] = row[i]
		}
		servers[row[1]] = cols
	}
	return servers
}

// loadResult counts the outcomes of the load loop.
type loadResult struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	samples    []string // the first few failures
}

func (r *loadResult) fail(what string) {
	r.failed.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.samples) < 5 {
		r.samples = append(r.samples, what)
	}
}

// runLoad sends GET /health through HAProxy from workers clients on
// kept-alive connections until ctx ends.
func runLoad(ctx context.Context, url string, workers int) *loadResult {
	r := &loadResult{}
	client := &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: workers, DialContext: (&net.Dialer{}).DialContext},
		Timeout:   5 * time.Second,
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				resp, err := client.Get(url)
				if err != nil {
					r.fail(err.Error())
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					r.fail(resp.Status)
					continue
				}
				r.ok.Add(1)
			}
		})
	}
	wg.Wait()
	client.CloseIdleConnections()
	return r
}

// drainBehindHAProxy puts HAProxy in front of two probegate instances with
// the drain window given, runs steady load through it, sends SIGTERM to one
// instance a second in, and keeps the load on until a second after that
// instance has exited. It returns the load's outcome and whether HAProxy
// marked the instance DOWN while it was still running.
func drainBehindHAProxy(t *testing.T, drain string) (*loadResult, bool) {
	p1, p2 := startReadyProbegate(t, drain), startReadyProbegate(t, drain)
	h := startHAProxy(t, strings.TrimPrefix(p1.base, "http://"), strings.TrimPrefix(p2.base, "http://"))

	ctx, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	loaded := make(chan *loadResult, 1)
	go func() { loaded <- runLoad(ctx, h.front+"/health", 8) }()

	time.Sleep(time.Second)
	if err := p1.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	downWhileRunning := false
	for {
		select {
		case <-p1.done:
		case <-time.After(50 * time.Millisecond):
			if h.serverStatus("p1") == "DOWN" {
				downWhileRunning = true
			}
			continue
		}
		break
	}
	if code := p1.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the drained probegate exited %d, want 0", code)
	}
	time.Sleep(time.Second)
	stop()
	return <-loaded, downWhileRunning
}

// TestHAProxyDrainLosesNoRequest: behind a real HAProxy, an instance
// drained with a 2s window (more than HAProxy's 2 × 300ms to notice) loses
// no client request. The same without a window is measured and reported.
func TestHAProxyDrainLosesNoRequest(t *testing.T) {
	t.Run("window_2s", func(t *testing.T) {
		r, down := drainBehindHAProxy(t, "2s")
		t.Logf("2s window: %d requests ok, %d failed", r.ok.Load(), r.failed.Load())
		if !down {
			t.Error("HAProxy never marked the draining instance DOWN while it still ran")
		}
		if n := r.failed.Load(); n != 0 {
			t.Errorf("%d client requests failed (first: %q), want none", n, r.samples)
		}
		if r.ok.Load() < 100 {
			t.Errorf("only %d requests succeeded: the load did not run", r.ok.Load())
		}
	})
	t.Run("no_window", func(t *testing.T) {
		r, down := drainBehindHAProxy(t, "0s")
		// Not asserted: this is what the window buys, measured.
		t.Logf("no window: %d requests ok, %d failed (first: %q); HAProxy marked it DOWN before it exited: %v",
			r.ok.Load(), r.failed.Load(), r.samples, down)
		if r.ok.Load() < 100 {
			t.Errorf("only %d requests succeeded: the load did not run", r.ok.Load())
		}
	})
}

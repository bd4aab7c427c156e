package e2e

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// These tests attack the real binary as a client on loopback would: an open
// proxy, leaked credentials, forged forwarding headers, and the backend's
// own headers leaking back.

// recordingBackend is a loopback backend that remembers the headers of the
// last fan-out request (any path but the probe path) and of the last probe.
type recordingBackend struct {
	*httptest.Server
	mu         sync.Mutex
	fanout     http.Header
	probe      http.Header
	fanoutHits int
	answer     func(w http.ResponseWriter)
}

func newRecordingBackend(t *testing.T, answer func(w http.ResponseWriter)) *recordingBackend {
	t.Helper()
	b := &recordingBackend{answer: answer}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		if r.URL.Path == "/healthz" {
			b.probe = r.Header.Clone()
			b.mu.Unlock()
			return
		}
		b.fanout = r.Header.Clone()
		b.fanoutHits++
		b.mu.Unlock()
		b.answer(w)
	}))
	t.Cleanup(b.Close)
	return b
}

func (b *recordingBackend) last() (fanout, probe http.Header, hits int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fanout, b.probe, b.fanoutHits
}

func jsonArray(w http.ResponseWriter) { io.WriteString(w, "[1]") }

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestFanoutIsNoOpenProxyByDefault: without fanout.enabled, /fanout/ asks
// no backend, whatever the method.
func TestFanoutIsNoOpenProxyByDefault(t *testing.T) {
	b := newRecordingBackend(t, jsonArray)
	p := startProbegate(t, "--backend=a="+b.URL)
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		req, _ := http.NewRequest(method, p.base+"/fanout/q", strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "fanout.enabled") {
			t.Errorf("%s /fanout/q with the fan-out off = %d %q, want 404 naming fanout.enabled", method, resp.StatusCode, body)
		}
	}
	if _, _, hits := b.last(); hits != 0 {
		t.Errorf("a disabled fan-out reached the backend %d times", hits)
	}
}

// TestFanoutForwardsNoClientCredentialsAndNoForgedHeaders: behind basic
// auth, the client's Authorization (its password for probegate) reaches no
// backend, a backend with credentials of its own gets those, cookies and
// forged forwarding headers are dropped and X-Forwarded-* set afresh, and a
// relayed 4xx carries none of the backend's own headers; a cross-site
// browser POST is refused.
func TestFanoutForwardsNoClientCredentialsAndNoForgedHeaders(t *testing.T) {
	plain := newRecordingBackend(t, jsonArray)
	authed := newRecordingBackend(t, jsonArray)
	dir := t.TempDir()
	webConfig := filepath.Join(dir, "web.yml")
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, webConfig, "basic_auth_users:\n  operator: "+string(hash)+"\n")
	config := filepath.Join(dir, "probegate.yml")
	writeFile(t, config, fmt.Sprintf(`health_probe: {interval: 200ms, timeout: 100ms}
fanout: {enabled: true}
backends:
  - {name: plain, url: %q}
  - name: authed
    url: %q
    http_client_config: {basic_auth: {username: probegate, password: backend-secret}}
`, plain.URL, authed.URL))
	addr := freeAddr(t)
	launchProbegate(t, addr, "--config.file="+config, "--web.config.file="+webConfig)
	base := "http://" + addr
	do := func(method, path string, header http.Header) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader("{}"))
		req.SetBasicAuth("operator", "s3cret")
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	waitFor(t, 10*time.Second, "probegate behind basic auth", func() bool {
		req, _ := http.NewRequest(http.MethodGet, base+"/healthz", nil)
		req.SetBasicAuth("operator", "s3cret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	resp := do(http.MethodGet, "/fanout/q", http.Header{
		"Cookie":            {"session=client"},
		"X-Forwarded-For":   {"10.9.9.9"},
		"X-Forwarded-Host":  {"forged.example"},
		"X-Forwarded-Proto": {"https"},
		"Forwarded":         {"for=10.9.9.9"},
		"X-Real-Ip":         {"10.9.9.9"},
		"X-Request-Id":      {"req-7"},
	})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Backends") != "2/2" {
		t.Fatalf("fan-out = %d X-Backends %q, want 200 2/2", resp.StatusCode, resp.Header.Get("X-Backends"))
	}
	client := "Basic " + base64.StdEncoding.EncodeToString([]byte("operator:s3cret"))
	for name, b := range map[string]*recordingBackend{"plain": plain, "authed": authed} {
		h, _, _ := b.last()
		for _, dropped := range []string{"Cookie", "Forwarded", "X-Real-Ip"} {
			if v := h.Get(dropped); v != "" {
				t.Errorf("%s got the client's %s %q", name, dropped, v)
			}
		}
		if got := h.Get("Authorization"); got == client {
			t.Errorf("%s got the client's own credentials for probegate", name)
		}
		if h.Get("X-Forwarded-For") != "127.0.0.1" || h.Get("X-Forwarded-Host") != addr || h.Get("X-Forwarded-Proto") != "http" || h.Get("X-Request-Id") != "req-7" {
			t.Errorf("%s forwarding headers %v, want X-Forwarded-* set afresh and X-Request-Id kept", name, h)
		}
	}
	if h, _, _ := authed.last(); h.Get("Authorization") != "Basic "+base64.StdEncoding.EncodeToString([]byte("probegate:backend-secret")) {
		t.Errorf("the backend with credentials got Authorization %q, want its configured ones", h.Get("Authorization"))
	}
	if h, _, _ := plain.last(); h.Get("Authorization") != "" {
		t.Errorf("the backend without credentials got Authorization %q, want none", h.Get("Authorization"))
	}

	// Both backends refuse: the first 4xx is relayed with nothing of the
	// backend's own but what the client needs to read it.
	refuse := func(w http.ResponseWriter) {
		for k, v := range map[string]string{"Set-Cookie": "backend=1", "Server": "secret-server/1.0", "Location": "http://internal.example/",
			"Www-Authenticate": "Basic realm=internal", "X-Internal": "yes", "Content-Type": "application/problem+json", "Retry-After": "7"} {
			w.Header().Set(k, v)
		}
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":"bad query"}`)
	}
	plain.mu.Lock()
	plain.answer = refuse
	plain.mu.Unlock()
	authed.mu.Lock()
	authed.answer = refuse
	authed.mu.Unlock()
	resp = do(http.MethodGet, "/fanout/q", nil)
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/problem+json" || resp.Header.Get("Retry-After") != "7" {
		t.Errorf("relayed 4xx = %d %v, want 400 with the backend's Content-Type and Retry-After", resp.StatusCode, resp.Header)
	}
	for _, leaked := range []string{"Set-Cookie", "Location", "Www-Authenticate", "X-Internal"} {
		if v := resp.Header.Get(leaked); v != "" {
			t.Errorf("the relayed 4xx carries the backend's %s %q", leaked, v)
		}
	}
	if v := resp.Header.Get("Server"); v == "secret-server/1.0" {
		t.Errorf("the relayed 4xx carries the backend's Server %q", v)
	}

	_, _, before := plain.last()
	resp = do(http.MethodPost, "/fanout/q", http.Header{"Sec-Fetch-Site": {"cross-site"}})
	if _, _, after := plain.last(); resp.StatusCode != http.StatusForbidden || after != before {
		t.Errorf("cross-site POST /fanout = %d, backend asked %d more times; want 403 and none", resp.StatusCode, after-before)
	}
}

// TestReloadAppliesAChangedSecret: changing only an inline password and
// reloading makes the probes send the new one.
func TestReloadAppliesAChangedSecret(t *testing.T) {
	b := newRecordingBackend(t, jsonArray)
	config := filepath.Join(t.TempDir(), "probegate.yml")
	write := func(password string) {
		writeFile(t, config, fmt.Sprintf("health_probe: {interval: 100ms, timeout: 50ms}\nhttp_client_config: {basic_auth: {username: u, password: %s}}\nbackends:\n  - {name: a, url: %q}\n", password, b.URL))
	}
	want := func(password string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte("u:"+password))
	}
	write("one")
	p := startProbegate(t, "--config.file="+config)
	waitFor(t, 5*time.Second, "probes with the first password", func() bool {
		_, h, _ := b.last()
		return h.Get("Authorization") == want("one")
	})
	write("two")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "probes with the reloaded password", func() bool {
		_, h, _ := b.last()
		return h.Get("Authorization") == want("two")
	})
}

// TestPasswordsInURLsAreNeverShown: a backend URL with a password is
// refused by check-config, at start-up and by a reload without the
// password appearing in the output, the log or the answer.
func TestPasswordsInURLsAreNeverShown(t *testing.T) {
	const password = "hunter2"
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yml")
	writeFile(t, bad, "backends:\n  - {name: a, url: \"http://admin:"+password+"@127.0.0.1:1\"}\n")

	out, err := exec.Command(binary(t), "check-config", "--config.file="+bad).CombinedOutput()
	if err == nil || bytes.Contains(out, []byte(password)) || !bytes.Contains(out, []byte("credentials")) {
		t.Errorf("check-config: err %v, output %q; want a failure naming the problem without the password", err, out)
	}
	out, err = exec.Command(binary(t), "check-config", "--backend=a=http://admin:"+password+"@127.0.0.1:1").CombinedOutput()
	if err == nil || bytes.Contains(out, []byte(password)) {
		t.Errorf("check-config --backend: err %v, output %q; want a failure without the password", err, out)
	}

	good := filepath.Join(dir, "probegate.yml")
	writeFile(t, good, "backends:\n  - {name: a, url: \"http://127.0.0.1:1\"}\n")
	p := startProbegate(t, "--config.file="+good, "--web.enable-lifecycle")
	data, _ := os.ReadFile(bad)
	writeFile(t, good, string(data))
	resp, err := http.Post(p.admin+"/-/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || bytes.Contains(body, []byte(password)) {
		t.Errorf("bad reload = %d %q; want 500 without the password", resp.StatusCode, body)
	}
	if strings.Contains(p.output.String(), password) {
		t.Errorf("the log shows the password:\n%s", p.output.String())
	}
}

// TestReadinessSurvivesAFlood: thousands of idle connections and hundreds
// of slow fan-outs on the main listener, with probegate limited to 256
// descriptors, while a balancer polls /ready on the health listener with a
// new connection each time: /ready keeps answering 200 with p99 <= 50 ms,
// no backend is ejected or charged a failure (refused rounds are local),
// and probegate's descriptors stay under the limit.
func TestReadinessSurvivesAFlood(t *testing.T) {
	const fdLimit, idleConns, slowFanouts = 256, 2000, 300
	slow := newRecordingBackend(t, func(w http.ResponseWriter) {
		time.Sleep(300 * time.Millisecond)
		io.WriteString(w, "[1]")
	})
	config := filepath.Join(t.TempDir(), "probegate.yml")
	writeFile(t, config, fmt.Sprintf(`health_probe: {interval: 500ms, timeout: 400ms}
fanout: {enabled: true, timeout: 2s, max_concurrent: 16}
passive_health: {enabled: true, window: 30s, max_failures: 1, min_requests: 1, max_ejected_percent: 100}
backends:
  - {name: a, url: %q}
  - {name: b, url: %q}
`, slow.URL, slow.URL+"/b"))
	addr, healthAddr := freeAddr(t), freeAddr(t)
	cmd := exec.Command("sh", "-c", fmt.Sprintf("ulimit -n %d && exec \"$0\" \"$@\"", fdLimit), binary(t),
		"--config.file="+config, "--web.listen-address="+addr, "--web.health-listen-address="+healthAddr,
		"--web.max-connections=64", "--web.read-timeout=10s", "--web.admin-listen-address="+freeAddr(t))
	output, done := startProcess(t, "probegate", cmd)
	ready := "http://" + healthAddr + "/ready"
	waitFor(t, 10*time.Second, "/ready on the health listener", func() bool {
		resp, err := http.Get(ready)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	// The flood: idle connections that never send a byte, and slow rounds.
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range idleConns {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break // The backlog is full: that is the flood too.
		}
		conns = append(conns, c)
	}
	stop := make(chan struct{})
	var flood sync.WaitGroup
	floodClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for range slowFanouts {
		flood.Go(func() {
			for i := 0; i < 5; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if resp, err := floodClient.Get("http://" + addr + "/fanout/q"); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}

	// A balancer polling /ready, a new connection each time.
	poller := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var latencies []time.Duration
	maxFDs, maxRSS := 0, 0
	for i := 0; i < 200; i++ {
		start := time.Now()
		resp, err := poller.Get(ready)
		if err != nil {
			t.Fatalf("/ready during the flood: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		latencies = append(latencies, time.Since(start))
		if resp.StatusCode != http.StatusOK {
			t.Errorf("/ready during the flood = %d, want 200", resp.StatusCode)
		}
		if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid)); err == nil {
			maxFDs = max(maxFDs, len(fds))
		}
		maxRSS = max(maxRSS, residentKiB(cmd.Process.Pid))
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	flood.Wait()

	slices.Sort(latencies)
	p99 := latencies[len(latencies)*99/100]
	t.Logf("flood: %d idle connections, %d fan-out clients; /ready p50 %v p99 %v; probegate descriptors at most %d of %d, RSS at most %d KiB",
		len(conns), slowFanouts, latencies[len(latencies)/2], p99, maxFDs, fdLimit, maxRSS)
	if p99 > 50*time.Millisecond {
		t.Errorf("/ready p99 %v during the flood, want <= 50ms", p99)
	}
	if maxFDs >= fdLimit {
		t.Errorf("probegate held %d descriptors, at its limit of %d", maxFDs, fdLimit)
	}
	select {
	case <-done:
		t.Fatalf("probegate exited during the flood:\n%s", output.String())
	default:
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	metrics := getBody(t, "http://"+addr+"/metrics")
	for _, name := range []string{"a", "b"} {
		for _, reason := range []string{"timeout", "transport", "http_5xx", "http_429"} {
			series := fmt.Sprintf(`probegate_fanout_backend_errors_total{backend=%q,reason=%q} 0`, name, reason)
			if !strings.Contains(metrics, series) {
				t.Errorf("backend %s was charged %s errors by a flood of probegate's own making", name, reason)
			}
		}
		if !strings.Contains(metrics, fmt.Sprintf(`probegate_passive_ejections_total{backend=%q} 0`, name)) {
			t.Errorf("backend %s was ejected during the flood", name)
		}
	}
}

// residentKiB is a process's resident set size in KiB, 0 when unknown.
func residentKiB(pid int) int {
	return statusKiB(pid, "VmRSS:")
}

// statusKiB is the size in KiB that a process's /proc status gives for
// field (such as "VmHWM:", the peak resident set size), 0 when unknown.
func statusKiB(pid int, field string) int {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			var kib int
			fmt.Sscan(rest, &kib)
			return kib
		}
	}
	return 0
}

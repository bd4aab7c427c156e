package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingBackend is a real loopback backend that answers its probe path
// 200 and every other request with answer, counting those.
type countingBackend struct {
	*httptest.Server
	hits atomic.Int64
}

func newCountingBackend(t *testing.T, answer http.HandlerFunc) *countingBackend {
	t.Helper()
	b := &countingBackend{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		b.hits.Add(1)
		answer(w, r)
	}))
	t.Cleanup(b.Close)
	return b
}

// statusAnswer answers a JSON array with status.
func statusAnswer(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, "[1]")
	}
}

// fanoutConfig writes a configuration with the fan-out on, fast probes,
// the extra YAML (keys under fanout: indented by two) and the backends
// b0, b1, … at urls, and returns its path.
func fanoutConfig(t *testing.T, fanoutExtra, topExtra string, urls ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("health_probe: {interval: 200ms, timeout: 100ms, successes: 1}\n")
	b.WriteString("fanout:\n  enabled: true\n")
	if !strings.Contains(fanoutExtra, "  timeout:") {
		b.WriteString("  timeout: 5s\n")
	}
	b.WriteString(fanoutExtra + topExtra + "backends:\n")
	for i, u := range urls {
		fmt.Fprintf(&b, "  - {name: b%d, url: %q}\n", i, u)
	}
	path := filepath.Join(t.TempDir(), "probegate.yml")
	writeFile(t, path, b.String())
	return path
}

// fanoutGet does one fan-out request and returns the status, header and
// body.
func fanoutGet(t testing.TB, url string, header http.Header) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

func waitHealthy(t *testing.T, p *probegateProcess, n int) {
	t.Helper()
	waitFor(t, 10*time.Second, "backends healthy", func() bool {
		healthy := 0
		for _, b := range getHealthz(t, p.base) {
			if b.State == "healthy" {
				healthy++
			}
		}
		return healthy == n
	})
}

// TestFanoutQuorumBothWays: with two of three backends answering, a
// quorum of 2 answers the merge and a quorum of "100%" answers 503 naming
// the missing backend, with X-Backends and X-Backends-Missing.
func TestFanoutQuorumBothWays(t *testing.T) {
	ok1, ok2, down := newCountingBackend(t, statusAnswer(200)), newCountingBackend(t, statusAnswer(200)), newCountingBackend(t, statusAnswer(503))
	for _, c := range []struct {
		quorum string
		status int
	}{{"2", 200}, {"100%", 503}} {
		p := startProbegate(t, "--config.file="+fanoutConfig(t, "  expose_missing: true\n  min_contributors: "+c.quorum+"\n", "", ok1.URL, down.URL, ok2.URL))
		waitHealthy(t, p, 3)
		status, header, body := fanoutGet(t, p.base+"/fanout/q", nil)
		if status != c.status || header.Get("X-Backends") != "2/3" || header.Get("X-Backends-Missing") != "b1=http_5xx" {
			t.Errorf("quorum %s: %d, X-Backends %q, X-Backends-Missing %q; want %d, 2/3, b1=http_5xx (%s)",
				c.quorum, status, header.Get("X-Backends"), header.Get("X-Backends-Missing"), c.status, body)
		}
		if c.status == 503 {
			var e struct {
				Backends []struct{ Backend, Reason string } `json:"backends"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || len(e.Backends) != 1 || e.Backends[0].Backend != "b1" || e.Backends[0].Reason != "http_5xx" {
				t.Errorf("503 body %s; want b1 missing for http_5xx", body)
			}
			if got := metricValue(t, p.base, "probegate_fanout_quorum_failures_total"); got != 1 {
				t.Errorf("quorum failures %v; want 1", got)
			}
		}
	}
}

// TestFanoutStaticSelfLoopRefused: a backend pointing at probegate's own
// /fanout stops it at start, with an error naming the backend.
func TestFanoutStaticSelfLoopRefused(t *testing.T) {
	addr := freeAddr(t)
	real := newCountingBackend(t, statusAnswer(200))
	p := launchProbegate(t, addr, "--config.file="+fanoutConfig(t, "", "", real.URL, "http://"+addr+"/fanout"))
	if code := p.exitCode(t, 10*time.Second); code == 0 {
		t.Fatalf("probegate with a self-pointing backend exited 0")
	}
	if out := p.output.String(); !strings.Contains(out, `backend \"b1\"`) || !strings.Contains(out, "points at one of probegate's own listeners") {
		t.Errorf("the error does not name the backend:\n%s", out)
	}
}

// TestFanoutDiscoveredSelfLoopCostsAtMostMaxHops: a discovered target
// pointing at probegate's own /fanout is dropped, and a client request
// costs at most max_hops rounds (one: the real backend's).
func TestFanoutDiscoveredSelfLoopCostsAtMostMaxHops(t *testing.T) {
	addr := freeAddr(t)
	real := newCountingBackend(t, statusAnswer(200))
	dir := t.TempDir()
	writeAtomically(t, filepath.Join(dir, "self.yml"), fmt.Sprintf("- targets: [%q]\n  labels: {backend: self, __base_path__: /fanout}\n", addr))
	cfg := fanoutConfig(t, "  max_hops: 3\n", fmt.Sprintf("file_sd_configs: [{files: [%q]}]\n", filepath.Join(dir, "*.yml")), real.URL)
	// Probes of a backend under /fanout would be rounds of their own.
	if err := os.WriteFile(cfg, []byte(strings.Replace(mustRead(t, cfg), "health_probe: {", "health_probe: {enabled: false, ", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := launchProbegate(t, addr, "--config.file="+cfg, "--discovery.update-interval=100ms")
	p.waitServing(t)
	time.Sleep(500 * time.Millisecond) // Let discovery deliver the target.
	status, _, body := fanoutGet(t, p.base+"/fanout/q", nil)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	if got := real.hits.Load(); got < 1 || got > 3 {
		t.Errorf("the real backend was asked %d times for one client request; want 1 to max_hops (3)", got)
	}
	// Discovery drops the target: it never became a backend.
	if hz := getHealthz(t, p.base); len(hz) != 1 {
		t.Errorf("backends %v; want only b0, the self-pointing target dropped", hz)
	}
	if got := metricValue(t, p.base, `probegate_discovery_dropped_targets_total{reason="loop"}`); got < 1 {
		t.Errorf("dropped loops %v; want at least 1", got)
	}
}

// TestFanoutRingCostsMaxHopsRounds: four probegates, each the next one's
// backend (under /fanout) besides a real one, with distinct names: a
// client request costs exactly max_hops (3) rounds, the fourth probegate
// refusing the request that passed three.
func TestFanoutRingCostsMaxHopsRounds(t *testing.T) {
	real := newCountingBackend(t, statusAnswer(200))
	addrs := []string{freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)}
	var ps []*probegateProcess
	for i, addr := range addrs {
		next := "http://" + addrs[(i+1)%len(addrs)] + "/fanout"
		path := filepath.Join(t.TempDir(), "probegate.yml")
		writeFile(t, path, fmt.Sprintf(`
fanout: {enabled: true, timeout: 5s, max_hops: 3}
backends:
  - {name: next, url: %q, health_probe: {enabled: false}}
  - {name: real, url: %q}
`, next, real.URL))
		ps = append(ps, launchProbegate(t, addr, "--config.file="+path, fmt.Sprintf("--replica.name=pg-%d", i)))
	}
	for _, p := range ps {
		p.waitServing(t)
	}
	status, _, body := fanoutGet(t, ps[0].base+"/fanout/q", nil)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	if got := real.hits.Load(); got != 3 {
		t.Errorf("%d rounds reached the real backend; want max_hops, 3", got)
	}
	if got := metricValue(t, ps[3].base, `probegate_fanout_rejected_total{reason="loop"}`); got != 1 {
		t.Errorf("the fourth probegate refused %v loops; want 1", got)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFanoutMemoryBoundAgainstEndlessBackends: backends that stream
// without end, asked by 16 clients at once for 6 seconds, keep
// probegate's resident memory under max_buffered_bytes (32 MiB) + 64 MiB;
// the answers that did not fit are counted local.
func TestFanoutMemoryBoundAgainstEndlessBackends(t *testing.T) {
	chunk := []byte("[" + strings.Repeat(`"xxxxxxxxxxxxxxx",`, 3600))
	endless := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
	var urls []string
	for range 3 {
		urls = append(urls, newCountingBackend(t, endless).URL)
	}
	p := startProbegate(t, "--config.file="+fanoutConfig(t, "  timeout: 3s\n  max_response_bytes: 16MiB\n  max_buffered_bytes: 32MiB\n", "", urls...))
	pid := p.cmd.Process.Pid
	var peak atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if kib := int64(residentKiB(pid)); kib > peak.Load() {
				peak.Store(kib)
			}
		}
	})
	end := time.Now().Add(6 * time.Second)
	var clients sync.WaitGroup
	for range 16 {
		clients.Go(func() {
			for i := 0; i < 100 && time.Now().Before(end); i++ {
				resp, err := http.Get(p.base + "/fanout/q")
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	clients.Wait()
	close(stop)
	wg.Wait()
	limit := int64(32+64) << 10
	t.Logf("peak RSS %d KiB, bound %d KiB", peak.Load(), limit)
	if peak.Load() == 0 || peak.Load() > limit {
		t.Errorf("peak RSS %d KiB; want under %d KiB", peak.Load(), limit)
	}
	local := 0.0
	for i := range urls {
		local += metricValue(t, p.base, fmt.Sprintf(`probegate_fanout_backend_errors_total{backend="b%d",reason="local"}`, i))
	}
	if local == 0 {
		t.Errorf("no answer was refused for the buffer bound: the test did not reach it")
	}
}

// outlierHealthz is a backend's state and ejection in /healthz.
type outlierHealthz struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	Ejection *struct {
		Reason   string `json:"reason"`
		Enforced bool   `json:"enforced"`
	} `json:"ejection"`
}

func getOutlierHealthz(t *testing.T, base string) map[string]outlierHealthz {
	t.Helper()
	var body struct {
		Backends []outlierHealthz `json:"backends"`
	}
	if err := json.Unmarshal([]byte(getBody(t, base+"/healthz")), &body); err != nil {
		t.Fatal(err)
	}
	out := map[string]outlierHealthz{}
	for _, b := range body.Backends {
		out[b.Name] = b
	}
	return out
}

// outlierConfig is outlier detection judging from 10 rounds.
const outlierConfig = "  outlier_detection: {enabled: true, min_rounds: 10, window: 30s}\n"

// queryAnswer fails (500) the queries named bad, and the ok ones when
// failOK, and answers the others.
func queryAnswer(failOK bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("q") == "bad" || failOK {
			w.WriteHeader(500)
			return
		}
		io.WriteString(w, "[1]")
	}
}

// TestOutlierEjectsTheLoneFailureNotTheBadQuery: rounds a bad query makes
// every backend fail eject nobody; a backend failing alone among healthy
// peers is ejected.
func TestOutlierEjectsTheLoneFailureNotTheBadQuery(t *testing.T) {
	var urls []string
	for i := range 4 {
		urls = append(urls, newCountingBackend(t, queryAnswer(i == 0)).URL)
	}
	p := startProbegate(t, "--config.file="+fanoutConfig(t, outlierConfig, "", urls...))
	waitHealthy(t, p, 4)
	for range 20 {
		fanoutGet(t, p.base+"/fanout/x?q=bad", nil)
	}
	for name, b := range getOutlierHealthz(t, p.base) {
		if b.State == "ejected" {
			t.Fatalf("%s ejected by rounds in which every backend failed", name)
		}
	}
	if got := metricValue(t, p.base, "probegate_fanout_correlated_failures_total"); got != 20 {
		t.Errorf("correlated failures %v; want 20", got)
	}
	for range 10 {
		fanoutGet(t, p.base+"/fanout/x?q=ok", nil)
	}
	hz := getOutlierHealthz(t, p.base)
	if b := hz["b0"]; b.State != "ejected" || b.Ejection == nil || b.Ejection.Reason != "failure" {
		t.Errorf("b0 failing alone: %+v; want ejected for failure", b)
	}
	if _, header, _ := fanoutGet(t, p.base+"/fanout/x?q=ok", nil); header.Get("X-Backends") != "3/4" {
		t.Errorf("X-Backends %q with b0 ejected; want 3/4", header.Get("X-Backends"))
	}
	if got := metricValue(t, p.base, `probegate_backend_state{backend="b0",state="ejected"}`); got != 1 {
		t.Errorf("state-set ejected = %v; want 1", got)
	}
}

// TestOutlierEjectsASlowBackendAndTheMedianDrops: a backend answering in
// 150 ms among fast ones is ejected for latency, and the median round
// falls from its 150 ms to the fast ones'.
func TestOutlierEjectsASlowBackendAndTheMedianDrops(t *testing.T) {
	var urls []string
	for i := range 4 {
		urls = append(urls, newCountingBackend(t, func(w http.ResponseWriter, _ *http.Request) {
			if i == 3 {
				time.Sleep(150 * time.Millisecond)
			}
			io.WriteString(w, "[1]")
		}).URL)
	}
	p := startProbegate(t, "--config.file="+fanoutConfig(t, outlierConfig, "", urls...))
	waitHealthy(t, p, 4)
	median := func(n int) time.Duration {
		var took []time.Duration
		for range n {
			start := time.Now()
			fanoutGet(t, p.base+"/fanout/q", nil)
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		return took[n/2]
	}
	before := median(10)
	hz := getOutlierHealthz(t, p.base)
	if b := hz["b3"]; b.State != "ejected" || b.Ejection == nil || b.Ejection.Reason != "latency" {
		t.Fatalf("the 150ms backend after 10 rounds: %+v; want ejected for latency", b)
	}
	after := median(10)
	t.Logf("median round %v before the ejection, %v after", before, after)
	if before < 150*time.Millisecond || after > 50*time.Millisecond {
		t.Errorf("median round %v before, %v after; want 150ms or more, then under 50ms", before, after)
	}
}

// TestOutlierNeverEjectsBelowTheBudget: with min_available 4 of 4 the
// failing backend stays, and the suppressed ejection is counted.
func TestOutlierNeverEjectsBelowTheBudget(t *testing.T) {
	var urls []string
	for i := range 4 {
		urls = append(urls, newCountingBackend(t, queryAnswer(i == 0)).URL)
	}
	p := startProbegate(t, "--config.file="+fanoutConfig(t, outlierConfig, "readiness: {min_available: 4}\n", urls...))
	waitHealthy(t, p, 4)
	for range 15 {
		fanoutGet(t, p.base+"/fanout/x?q=ok", nil)
	}
	if b := getOutlierHealthz(t, p.base)["b0"]; b.State == "ejected" {
		t.Errorf("b0 ejected below desired_healthy 4")
	}
	if got := metricValue(t, p.base, `probegate_outlier_ejections_suppressed_total{reason="failure"}`); got != 1 {
		t.Errorf("suppressed %v; want 1", got)
	}
	if got := metricValue(t, p.base, `probegate_outlier_ejections_total{backend="b0",enforced="true",reason="failure"}`); got != 0 {
		t.Errorf("ejections %v; want 0", got)
	}
}

// TestOutlierDryRunChangesNothing: with enforcing: false the failing
// backend keeps its state and traffic; the ejection it would have made is
// counted with enforced="false".
func TestOutlierDryRunChangesNothing(t *testing.T) {
	var urls []string
	for i := range 4 {
		urls = append(urls, newCountingBackend(t, queryAnswer(i == 0)).URL)
	}
	cfg := strings.Replace(outlierConfig, "enabled: true", "enabled: true, enforcing: false", 1)
	p := startProbegate(t, "--config.file="+fanoutConfig(t, cfg, "", urls...))
	waitHealthy(t, p, 4)
	for range 15 {
		fanoutGet(t, p.base+"/fanout/x?q=ok", nil)
	}
	b := getOutlierHealthz(t, p.base)["b0"]
	if b.State != "healthy" || b.Ejection == nil || b.Ejection.Enforced {
		t.Errorf("dry run: b0 %+v; want healthy with a dry-run ejection record", b)
	}
	if got := metricValue(t, p.base, `probegate_outlier_ejections_total{backend="b0",enforced="false",reason="failure"}`); got != 1 {
		t.Errorf("dry-run ejections %v; want 1", got)
	}
	if got := metricValue(t, p.base, `probegate_backend_in_service{backend="b0"}`); got != 1 {
		t.Errorf("b0 in service %v in a dry run; want 1", got)
	}
}

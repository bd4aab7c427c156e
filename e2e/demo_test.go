package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// healthzBackend is the part of a /healthz backend entry these tests read.
type healthzBackend struct {
	Name      string `json:"name"`
	State     string `json:"state"`
	InService bool   `json:"in_service"`
	Reachable bool   `json:"reachable"`
	Verified  bool   `json:"verified"`
}

func getHealthz(t testing.TB, base string) map[string]healthzBackend {
	t.Helper()
	var body struct {
		Backends []healthzBackend `json:"backends"`
	}
	getJSON(t, base+"/healthz", &body)
	out := map[string]healthzBackend{}
	for _, b := range body.Backends {
		out[b.Name] = b
	}
	return out
}

// getJSON decodes the JSON document at url into out.
func getJSON(t testing.TB, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}

func getBody(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDemoShowsEveryStateWithinTenSeconds is the tour's promise: each demo
// backend reaches its state in /healthz and /metrics within 10 s.
func TestDemoShowsEveryStateWithinTenSeconds(t *testing.T) {
	p := startProbegate(t, "demo")
	want := map[string]healthzBackend{
		"healthy":        {State: "healthy", InService: true, Reachable: true, Verified: true},
		"dead":           {State: "unhealthy", InService: false, Reachable: false, Verified: false},
		"wrong-path":     {State: "probe_unsupported", InService: true, Reachable: true, Verified: false},
		"flapping-proxy": {State: "unhealthy", InService: false, Reachable: true, Verified: true},
		"overloaded":     {State: "unhealthy", InService: false, Reachable: true, Verified: true},
		// listed by the demo's discovery file for its first 10 s
		"discovered-a": {State: "healthy", InService: true, Reachable: true, Verified: true},
	}
	var got map[string]healthzBackend
	waitFor(t, 10*time.Second, "every demo state in /healthz", func() bool {
		got = getHealthz(t, p.base)
		for name, w := range want {
			g := got[name]
			g.Name = ""
			if g != w {
				return false
			}
		}
		return true
	})
	metrics := getBody(t, p.base+"/metrics")
	for name, w := range want {
		series := `probegate_backend_state{backend="` + name + `",state="` + w.State + `"} 1`
		if !strings.Contains(metrics, series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}
	if !strings.Contains(p.output.String(), "/fanout/api/items") {
		t.Errorf("the demo banner does not show the fan-out curl:\n%s", p.output.String())
	}
	if !strings.Contains(p.output.String(), "Service discovery:") {
		t.Errorf("the demo banner does not tell of the discovery file:\n%s", p.output.String())
	}
}

// TestDemoBannerWorksAsPrinted runs the demo as make run leaves it, as
// ./probegate in the working directory, and follows the banner: the
// backends it counts are the ones /healthz shows once discovery has run,
// /status answers, and the maintenance command works pasted into a shell
// in that directory.
func TestDemoBannerWorksAsPrinted(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink(binary(t), filepath.Join(dir, "probegate")); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	p := &probegateProcess{base: "http://" + addr}
	p.cmd = exec.Command("./probegate", append(withAdminListener(t, p, []string{"demo"}), "--web.listen-address="+addr)...)
	p.cmd.Dir = dir
	p.output, p.done = startProcess(t, "probegate", p.cmd)
	p.waitServing(t)

	var banner string
	waitFor(t, 5*time.Second, "the demo banner", func() bool {
		banner = p.output.String()
		return strings.Contains(banner, "Service discovery:")
	})
	m := regexp.MustCompile(`probegate demo: (\d+) (?:loopback )?backends`).FindStringSubmatch(banner)
	if m == nil {
		t.Fatalf("the banner does not count the backends:\n%s", banner)
	}
	counted, _ := strconv.Atoi(m[1])
	// The pool is whole once the discovered backend has joined.
	var pool map[string]healthzBackend
	waitFor(t, 10*time.Second, "the discovered backend in /healthz", func() bool {
		pool = getHealthz(t, p.base)
		_, a := pool["discovered-a"]
		_, b := pool["discovered-b"]
		return a || b
	})
	if len(pool) != counted {
		t.Errorf("the banner counts %d backends, /healthz shows %d", counted, len(pool))
	}

	if !strings.Contains(banner, p.base+"/status ") {
		t.Errorf("the banner does not show %s/status:\n%s", p.base, banner)
	}
	if resp, err := http.Get(p.base + "/status"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /status: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	line := regexp.MustCompile(`(?m)^  (\S+ maintenance list --url \S+)$`).FindStringSubmatch(banner)
	if line == nil {
		t.Fatalf("the banner has no maintenance list command:\n%s", banner)
	}
	sh := exec.Command("sh", "-c", line[1])
	sh.Dir = dir
	out, err := sh.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "healthy") {
		t.Errorf("%s, pasted into a shell in the demo's directory: %v\n%s", line[1], err, out)
	}
}

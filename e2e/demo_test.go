package e2e

import (
	"encoding/json"
	"io"
	"net/http"
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
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Backends []healthzBackend `json:"backends"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("/healthz: %v", err)
	}
	out := map[string]healthzBackend{}
	for _, b := range body.Backends {
		out[b.Name] = b
	}
	return out
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

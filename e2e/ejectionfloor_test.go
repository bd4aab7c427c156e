package e2e

import (
	"fmt"
	"net/http"
	"testing"
)

// TestCraftedQueriesCannotFailReady reproduces the audit's finding with
// the real binary: 12 queries, each failing on one backend while its
// peers answer, made passive health eject backend after backend and
// /ready answer 503. Passive ejection now stops at desired_healthy: /ready
// answers 200 after every query, one backend is ejected and the two
// ejections the budget refused are counted.
func TestCraftedQueriesCannotFailReady(t *testing.T) {
	var urls []string
	for i := range 3 {
		name := fmt.Sprintf("b%d", i)
		urls = append(urls, newCountingBackend(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("fail") == name {
				statusAnswer(http.StatusInternalServerError)(w, r)
				return
			}
			statusAnswer(http.StatusOK)(w, r)
		}).URL)
	}
	// Probes readmit an ejected backend only after 3 ok probes, 3s: the
	// queries below run well within that.
	path := backendsConfig(t, `health_probe: {interval: 1s, timeout: 500ms, successes: 3}
gate: {check_interval: 10ms}
readiness: {min_available: 2}
fanout: {enabled: true, timeout: 5s}
passive_health: {enabled: true, window: 30s, max_failures: 4, max_ejected_percent: 100}
`, urls...)
	p := startProbegate(t, "--config.file="+path)
	waitHealthy(t, p, 3)

	for i := range 12 {
		fanoutGet(t, fmt.Sprintf("%s/fanout/q?fail=b%d", p.base, i/4), nil)
		if code, _, body := fanoutGet(t, p.base+"/ready", nil); code != http.StatusOK {
			t.Fatalf("after %d crafted queries /ready answers %d: %s", i+1, code, body)
		}
	}
	states := map[string]string{}
	for name, b := range getHealthz(t, p.base) {
		states[name] = b.State
	}
	if states["b0"] != "unhealthy" || states["b1"] != "healthy" || states["b2"] != "healthy" {
		t.Errorf("states %v; want b0 ejected, b1 and b2 kept at the floor of 2", states)
	}
	if got := metricValue(t, p.base, "probegate_passive_ejections_suppressed_total"); got != 2 {
		t.Errorf("probegate_passive_ejections_suppressed_total %v; want 2", got)
	}
}

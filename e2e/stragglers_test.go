package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// The stall and the bounds: a stalled backend takes 2s; a round that cuts
// it must answer well under a second, one that waits for it takes the
// stall. The bounds are generous on purpose: they tell the two apart on a
// loaded machine without timing anything tightly.
const (
	stall          = 2 * time.Second
	wellUnderStall = time.Second
)

// delayedAnswer answers a one-element JSON array after delay, or nothing
// if the request is cancelled first (a cut straggler's is).
func delayedAnswer(delay time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		statusAnswer(http.StatusOK)(w, r)
	}
}

// backendURLs starts one loopback backend per delay and returns their URLs.
func backendURLs(t *testing.T, delays ...time.Duration) []string {
	t.Helper()
	urls := make([]string, len(delays))
	for i, d := range delays {
		urls[i] = newCountingBackend(t, delayedAnswer(d)).URL
	}
	return urls
}

// oneStalledAmongFast are four backends answering in about 5ms and b2
// stalled.
func oneStalledAmongFast(t *testing.T) []string {
	t.Helper()
	fast := 5 * time.Millisecond
	return backendURLs(t, fast, fast, stall, fast, fast)
}

// timedFanoutGet is fanoutGet with the time it took.
func timedFanoutGet(t *testing.T, url string, header http.Header) (int, http.Header, string, time.Duration) {
	t.Helper()
	start := time.Now()
	status, h, body := fanoutGet(t, url, header)
	return status, h, body, time.Since(start)
}

const stragglersOnYAML = "  expose_missing: true\n  stragglers: {enabled: true}\n"

// TestStragglersCutTheStalledBackend: with fanout.stragglers on, every
// answer comes well under the stall, from four backends of five, with
// the stalled one named and counted; Probegate-Min-Contributors: all
// waits for it and is whole; an invalid value is a 400 naming the header.
func TestStragglersCutTheStalledBackend(t *testing.T) {
	p := startProbegate(t, "--config.file="+fanoutConfig(t, stragglersOnYAML, "", oneStalledAmongFast(t)...))
	waitHealthy(t, p, 5)

	const rounds = 20
	var took []time.Duration
	for range rounds {
		status, header, body, d := timedFanoutGet(t, p.base+"/fanout/q", nil)
		took = append(took, d)
		if status != http.StatusOK || header.Get("X-Backends") != "4/5" || header.Get("X-Backends-Missing") != "b2=straggler" || body != "[1,1,1,1]" {
			t.Fatalf("%d, X-Backends %q, X-Backends-Missing %q, body %q; want 200, 4/5, b2=straggler, [1,1,1,1]",
				status, header.Get("X-Backends"), header.Get("X-Backends-Missing"), body)
		}
	}
	slices.Sort(took)
	p50, p99 := took[len(took)/2], took[len(took)*99/100]
	t.Logf("one backend stalled %v among four at 5ms, stragglers on: p50 %v, p99 %v over %d rounds", stall, p50, p99, rounds)
	if p99 >= wellUnderStall {
		t.Errorf("p99 %v with the straggler cut; want well under the %v stall (< %v)", p99, stall, wellUnderStall)
	}
	if got := metricValue(t, p.base, `probegate_fanout_stragglers_total{backend="b2"}`); got != rounds {
		t.Errorf("b2 cut %v times; want %d", got, rounds)
	}
	if got := metricValue(t, p.base, `probegate_fanout_stragglers_total{backend="b0"}`); got != 0 {
		t.Errorf("b0 cut %v times; want 0", got)
	}
	if got := metricValue(t, p.base, `probegate_fanout_partial_stragglers_total`); got != rounds {
		t.Errorf("%v rounds partial by stragglers; want %d", got, rounds)
	}

	t.Run("all", func(t *testing.T) {
		status, header, body, d := timedFanoutGet(t, p.base+"/fanout/q", http.Header{"Probegate-Min-Contributors": {"all"}})
		if status != http.StatusOK || header.Get("X-Backends") != "5/5" || header.Get("X-Backends-Missing") != "" || body != "[1,1,1,1,1]" {
			t.Errorf("all: %d, X-Backends %q, X-Backends-Missing %q, body %q; want 200, 5/5 and whole",
				status, header.Get("X-Backends"), header.Get("X-Backends-Missing"), body)
		}
		if d < stall {
			t.Errorf("all: answered in %v; want it to wait for the %v stall", d, stall)
		}
	})

	t.Run("invalid header", func(t *testing.T) {
		for _, value := range []string{"0", "many", "-3"} {
			status, _, body := fanoutGet(t, p.base+"/fanout/q", http.Header{"Probegate-Min-Contributors": {value}})
			if status != http.StatusBadRequest || !strings.Contains(body, "Probegate-Min-Contributors") {
				t.Errorf("%q: %d %s; want 400 naming the header", value, status, body)
			}
		}
	})
}

// TestStragglersOffWaitForTheStall: without fanout.stragglers a round
// waits for the stalled backend and is whole.
func TestStragglersOffWaitForTheStall(t *testing.T) {
	p := startProbegate(t, "--config.file="+fanoutConfig(t, "  expose_missing: true\n", "", oneStalledAmongFast(t)...))
	waitHealthy(t, p, 5)
	status, header, _, d := timedFanoutGet(t, p.base+"/fanout/q", nil)
	if status != http.StatusOK || header.Get("X-Backends") != "5/5" {
		t.Errorf("%d, X-Backends %q; want 200, 5/5", status, header.Get("X-Backends"))
	}
	if d < stall {
		t.Errorf("answered in %v with stragglers off; want it to wait for the %v stall", d, stall)
	}
}

// TestStragglersSlowAlikeCutNobody: five backends taking 200ms each are
// judged against each other, so nobody is cut.
func TestStragglersSlowAlikeCutNobody(t *testing.T) {
	slow := 200 * time.Millisecond
	p := startProbegate(t, "--config.file="+fanoutConfig(t, stragglersOnYAML, "", backendURLs(t, slow, slow, slow, slow, slow)...))
	waitHealthy(t, p, 5)
	for i := range 5 {
		status, header, _, d := timedFanoutGet(t, p.base+"/fanout/q", nil)
		if status != http.StatusOK || header.Get("X-Backends") != "5/5" || header.Get("X-Backends-Missing") != "" {
			t.Errorf("round %d: %d, X-Backends %q, X-Backends-Missing %q; want 200, 5/5, nobody missing",
				i, status, header.Get("X-Backends"), header.Get("X-Backends-Missing"))
		}
		if d < slow {
			t.Errorf("round %d answered in %v; want it to wait for the %v every backend takes", i, d, slow)
		}
	}
	for i := range 5 {
		if got := metricValue(t, p.base, fmt.Sprintf(`probegate_fanout_stragglers_total{backend="b%d"}`, i)); got != 0 {
			t.Errorf("b%d cut %v times; want 0", i, got)
		}
	}
}

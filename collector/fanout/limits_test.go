package fanout

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"
)

// TestFanoutIsOffUntilEnabled: without fanout.enabled the endpoint is a
// 404 with a JSON error saying how to turn it on, and no backend is asked.
func TestFanoutIsOffUntilEnabled(t *testing.T) {
	b := serve(t, answer(200, `[]`))
	rig := setup(t, options{disabled: true}, b)
	rec := rig.do("POST", "/fanout/q", `{}`, nil)
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "fanout.enabled") {
		t.Errorf("disabled fan-out = %d %q; want 404 naming fanout.enabled", rec.Code, rec.Body.String())
	}
	if b.hits.Load() != 0 || rig.counters() != [3]float64{} {
		t.Errorf("a disabled fan-out asked %d backends, counted %v", b.hits.Load(), rig.counters())
	}
}

// TestFanoutRefusesOversizedForwardedHeaders: forwarded headers larger in
// total than fanout.max_request_header_bytes get 431 before any backend is
// asked; headers that are not forwarded do not count.
func TestFanoutRefusesOversizedForwardedHeaders(t *testing.T) {
	b := serve(t, answer(200, `[]`))
	rig := setup(t, options{fanout: config.Fanout{MaxRequestHeaderBytes: 1024}}, b)
	big := strings.Repeat("x", 1100)
	rec := rig.do("GET", "/fanout/q", "", http.Header{"Accept": {big}})
	expect(t, rec, http.StatusRequestHeaderFieldsTooLarge, "0/1", "")
	if b.hits.Load() != 0 {
		t.Errorf("the backend was asked %d times despite the 431", b.hits.Load())
	}
	expect(t, rig.do("GET", "/fanout/q", "", http.Header{"X-Not-Forwarded": {big}}), 200, "1/1", "[]")
}

// TestFanoutRejectsRoundsBeyondMaxConcurrent: with max_concurrent rounds in
// flight, one more gets 503 with Retry-After at once, counted as rejected
// and as a local error of each backend, and no backend is asked for it;
// passive health never hears of it.
func TestFanoutRejectsRoundsBeyondMaxConcurrent(t *testing.T) {
	release := make(chan struct{})
	held := make(chan struct{}, 2)
	b := serve(t, func(w http.ResponseWriter, r *http.Request) {
		held <- struct{}{}
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
		w.Write([]byte(`[]`))
	})
	passive := config.PassiveHealth{Enabled: true, Window: model.Duration(30 * time.Second), MaxFailures: 1, MinRequests: 1, MaxEjectedPercent: 100}
	rig := setup(t, options{fanout: config.Fanout{MaxConcurrent: 2}, passive: passive}, b)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { expect(t, rig.do("GET", "/fanout/q", "", nil), 200, "1/1", "[]") })
	}
	<-held
	<-held
	rec := rig.do("GET", "/fanout/q", "", nil)
	expect(t, rec, http.StatusServiceUnavailable, "0/1", "")
	if rec.Header().Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q; want 1", rec.Header().Get("Retry-After"))
	}
	close(release)
	wg.Wait()
	if hits := b.hits.Load(); hits != 2 {
		t.Errorf("the backend was asked %d times; want 2, the rejected round asks nobody", hits)
	}
	if got := testutil.ToFloat64(rig.metrics.rejectedMaxConcurrent); got != 1 {
		t.Errorf("probegate_fanout_rejected_total = %v; want 1", got)
	}
	if got := rig.errors(0, traffic.Local); got != 1 {
		t.Errorf("local errors = %d; want 1", got)
	}
	if rig.backend(0).Health().Ejected {
		t.Error("a local rejection ejected the backend")
	}
	// The slots are free again.
	expect(t, rig.do("GET", "/fanout/q", "", nil), 200, "1/1", "[]")
}

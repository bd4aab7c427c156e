package fanout

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"
)

// TestCorrelatedFailuresChargeNobody: rounds in which every backend
// fails alike eject nobody however many there are, and are counted; the
// errors are still counted per backend. One backend failing alone among
// succeeding peers is charged and ejected, and so is a backend that was
// the only one asked.
func TestCorrelatedFailuresChargeNobody(t *testing.T) {
	passive := config.PassiveHealth{Enabled: true, Window: model.Duration(time.Minute), MaxFailures: 3, MaxEjectedPercent: 100}

	all := setup(t, options{passive: passive}, serve(t, answer(500, ``)), serve(t, answer(502, ``)), serve(t, answer(503, ``)))
	for range 10 {
		all.do("GET", "/fanout/q", "", nil)
	}
	for i := range 3 {
		if h := all.backend(i).Health(); h.Ejected || !h.InService() {
			t.Errorf("b%d ejected by rounds where every backend failed: %+v", i, h)
		}
		if got := all.errors(i, traffic.HTTP5xx); got != 10 {
			t.Errorf("b%d http_5xx errors %d; want 10 still counted", i, got)
		}
	}
	if got := testutil.ToFloat64(all.metrics.correlatedFailures); got != 10 {
		t.Errorf("correlated failures %v; want 10, one per round", got)
	}

	alone := setup(t, options{passive: passive}, serve(t, answer(500, ``)), serve(t, answer(200, `[1]`)), serve(t, answer(404, ``)))
	alone.judged(1)
	for range 3 {
		alone.do("GET", "/fanout/q", "", nil)
	}
	if h := alone.backend(0).Health(); !h.Ejected {
		t.Errorf("b0 failing among succeeding peers not ejected: %+v", h)
	}
	if got := testutil.ToFloat64(alone.metrics.correlatedFailures); got != 0 {
		t.Errorf("correlated failures %v; want 0", got)
	}

	// The budget must allow the only backend out for passive health to
	// eject it (min_available 0): the readiness floor binds every ejector.
	none, err := config.ParseIntOrPercent("0")
	if err != nil {
		t.Fatal(err)
	}
	only := setup(t, options{passive: passive, readiness: config.Readiness{MinAvailable: &none}}, serve(t, answer(500, ``)))
	for range 3 {
		only.do("GET", "/fanout/q", "", nil)
	}
	if h := only.backend(0).Health(); !h.Ejected {
		t.Errorf("the only backend asked, failing, not ejected: %+v", h)
	}
}

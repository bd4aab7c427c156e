package fanout

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
)

// TestBackendDurationPerBackend: each backend's part in a round is
// observed under its name; a backend removed from the pool disappears at
// the next scrape, and with the fan-out off nothing is exported.
func TestBackendDurationPerBackend(t *testing.T) {
	rig := healthyThree(t)
	d := rig.metrics.backendDuration
	// Every backend's histogram is there before its first round.
	if text, err := testutil.CollectAndFormat(d, expfmt.TypeTextPlain, "probegate_fanout_backend_duration_seconds"); err != nil ||
		!strings.Contains(string(text), `_count{backend="b2"} 0`) {
		t.Errorf("before any round: %s, %v; want a zero histogram per backend", text, err)
	}
	for range 3 {
		expect(t, rig.do("GET", "/fanout/q", "", nil), 200, "3/3", `[0,1,2]`)
	}
	if got := testutil.CollectAndCount(d); got != 3 {
		t.Fatalf("%d histograms; want one per backend", got)
	}
	text, err := testutil.CollectAndFormat(d, expfmt.TypeTextPlain, "probegate_fanout_backend_duration_seconds")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`_count{backend="b0"} 3`, `_count{backend="b2"} 3`, `_bucket{backend="b1",le="+Inf"} 3`} {
		if !strings.Contains(string(text), want) {
			t.Errorf("missing %s in\n%s", want, text)
		}
	}
	if err := rig.pool.Apply(rig.targets[:2], rig.settings); err != nil {
		t.Fatal(err)
	}
	if got := testutil.CollectAndCount(d); got != 2 {
		t.Errorf("%d histograms after b2 left the pool; want 2", got)
	}
	cfg := rig.fanout.settings.Load().fanout
	cfg.Enabled = false
	rig.fanout.Update(cfg)
	if got := testutil.CollectAndCount(d); got != 0 {
		t.Errorf("%d histograms with the fan-out off; want none", got)
	}
}

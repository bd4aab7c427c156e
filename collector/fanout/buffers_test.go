package fanout

import (
	"strings"
	"testing"

	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"
)

// TestAnswerPastTheBufferBudgetIsLocal: an answer that would pass
// fanout.max_buffered_bytes does not contribute, is counted local (no
// fault of the backend's), and the round gives everything back.
func TestAnswerPastTheBufferBudgetIsLocal(t *testing.T) {
	big := "[" + strings.Repeat(`"x",`, 10<<10) + `"x"]`
	rig := setup(t, options{fanout: config.Fanout{MaxBufferedBytes: 32 << 10}},
		serve(t, answer(200, `[0]`)), serve(t, answer(200, big)))
	expect(t, rig.do("GET", "/fanout/q", "", nil), 200, "1/2", `[0]`)
	if got := rig.errors(1, traffic.Local); got != 1 {
		t.Errorf("local errors of b1 %d; want 1", got)
	}
	if got := rig.fanout.buffers.Used(); got != 0 {
		t.Errorf("%d bytes still taken after the round", got)
	}
	// The same answer fits a larger budget.
	rig = setup(t, options{fanout: config.Fanout{MaxBufferedBytes: 1 << 20}},
		serve(t, answer(200, `[0]`)), serve(t, answer(200, big)))
	if rec := rig.do("GET", "/fanout/q", "", nil); rec.Header().Get("X-Backends") != "2/2" {
		t.Errorf("X-Backends %q under a 1 MiB budget; want 2/2", rec.Header().Get("X-Backends"))
	}
}

// TestPostBodyTakesFromTheBudget: a request body that does not fit the
// budget is a local 503, and no backend is asked.
func TestPostBodyTakesFromTheBudget(t *testing.T) {
	b := serve(t, answer(200, `[0]`))
	rig := setup(t, options{fanout: config.Fanout{MaxBufferedBytes: 8 << 10}}, b)
	rec := rig.do("POST", "/fanout/q", strings.Repeat("x", 20<<10), nil)
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "1" || b.hits.Load() != 0 {
		t.Errorf("status %d, Retry-After %q, backend hits %d; want 503, 1 and 0", rec.Code, rec.Header().Get("Retry-After"), b.hits.Load())
	}
}

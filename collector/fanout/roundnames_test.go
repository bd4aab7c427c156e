package fanout

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/internal/deadport"
)

// TestLastRoundNamesEveryBackend: the round summary names the backends
// that contributed, the ones that failed and why, and the skipped ones.
func TestLastRoundNamesEveryBackend(t *testing.T) {
	rig := setup(t, options{}, serve(t, answer(200, `[0]`)), serve(t, answer(503, `down`)), serve(t, answer(200, `[2]`)))
	feed(rig.backend(2), health.StatusResult(503), 3)
	expect(t, rig.do("GET", "/fanout/q", "", nil), 200, "1/3", `[0]`)
	round := rig.fanout.LastRound()
	want := []RoundBackend{
		{Name: "b0", Outcome: OutcomeContributed, Status: 200},
		{Name: "b1", Outcome: OutcomeFailed, Reason: MissingHTTP5xx, Status: 503},
		{Name: "b2", Outcome: OutcomeSkipped, Reason: MissingUnhealthy},
	}
	if round == nil || fmt.Sprint(round.Backends) != fmt.Sprint(want) {
		t.Fatalf("LastRound backends = %+v; want %+v", round, want)
	}
}

// TestNoAnswer502NamesSkippedBackends: the 502 names the skipped backends
// too, not only the ones it asked.
func TestNoAnswer502NamesSkippedBackends(t *testing.T) {
	rig := setup(t, options{urls: map[int]string{0: deadport.URL(t)}},
		serve(t, nil), serve(t, answer(503, `down`)), serve(t, answer(200, `[2]`)))
	feed(rig.backend(2), health.StatusResult(503), 3)
	rec := rig.do("GET", "/fanout/q", "", nil)
	expect(t, rec, 502, "0/3", "")
	var got fanoutError
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("502 body %q is not JSON: %v", rec.Body.String(), err)
	}
	want := []fanoutBackendResult{{Backend: "b0", Reason: "transport"}, {Backend: "b1", Reason: "http_5xx", Status: 503}, {Backend: "b2", Reason: "unhealthy"}}
	if fmt.Sprint(got.Backends) != fmt.Sprint(want) {
		t.Errorf("502 backends %+v; want %+v", got.Backends, want)
	}
}

package vantage

import (
	"fmt"
	"testing"

	"github.com/probegate/probegate/collector/fleet"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/maintenance/store"
)

// TestPublishedIsBounded: whatever peers write after the first read, the
// verdicts held stay within their bounds; the excess is counted, and a
// deletion makes room again.
func TestPublishedIsBounded(t *testing.T) {
	value, err := fleet.Encode(fleet.Verdict{State: health.StateHealthy, Verified: true, Reachable: true})
	if err != nil {
		t.Fatal(err)
	}
	p := newPublished()
	var u store.VerdictUpdate
	for i := range maxVerdictsPerBackend + 3 {
		u.Verdicts = append(u.Verdicts, store.StoredVerdict{Replica: fmt.Sprintf("r%d", i), Backend: "b", Value: value})
	}
	u.Verdicts = append(u.Verdicts, store.StoredVerdict{Replica: "r0", Backend: "b", Value: []byte("garbage")})
	dropped, _ := p.apply(u, map[string]struct{}{})
	if got := len(p.byBackend["b"]); got != maxVerdictsPerBackend-1 || p.n != got {
		t.Errorf("held %d verdicts about one backend (n %d), want %d: the bound, less the one that stopped decoding", got, p.n, maxVerdictsPerBackend-1)
	}
	if dropped != 4 {
		t.Errorf("dropped %d, want 3 beyond the bound and 1 that does not decode", dropped)
	}
	p.apply(store.VerdictUpdate{Verdicts: []store.StoredVerdict{{Replica: "r1", Backend: "b"}, {Replica: "late", Backend: "b", Value: value}}}, map[string]struct{}{})
	if got := len(p.byBackend["b"]); got != maxVerdictsPerBackend-1 || p.n != got {
		t.Errorf("after a deletion and a put: %d held (n %d), want %d", got, p.n, maxVerdictsPerBackend-1)
	}
}

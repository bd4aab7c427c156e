package budget

import (
	"testing"
	"time"

	"github.com/probegate/probegate/config"
)

// TestAllowsDisruptionIsTheFloor: one more backend may leave service only
// while the pool stays at or above desired_healthy afterwards.
func TestAllowsDisruptionIsTheFloor(t *testing.T) {
	r := config.Readiness{MinAvailable: intOrPercent(t, "2")}
	for inService, want := range []bool{false, false, false, true, true} {
		if got := Compute(r, 4, inService).AllowsDisruption(); got != want {
			t.Errorf("%d of 4 in service, desired 2: allows a disruption %v, want %v", inService, got, want)
		}
	}
}

// TestSuppressionIsReportedOnceAWindow: an ejection suppressed again and
// again is reported at the first, then once the window has passed, and
// again if the clock goes back.
func TestSuppressionIsReportedOnceAWindow(t *testing.T) {
	var s Suppression
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	window := 30 * time.Second
	for _, c := range []struct {
		at   time.Duration
		want bool
	}{{0, true}, {time.Second, false}, {29 * time.Second, false}, {30 * time.Second, true}, {59 * time.Second, false}, {10 * time.Second, true}} {
		if got := s.First(start.Add(c.at), window); got != c.want {
			t.Errorf("at %v: first %v, want %v", c.at, got, c.want)
		}
	}
}

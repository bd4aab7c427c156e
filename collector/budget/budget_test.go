package budget

import (
	"testing"

	"github.com/probegate/probegate/config"
)

func intOrPercent(t *testing.T, s string) *config.IntOrPercent {
	t.Helper()
	v, err := config.ParseIntOrPercent(s)
	if err != nil {
		t.Fatal(err)
	}
	return &v
}

// TestCompute is the PodDisruptionBudget arithmetic of the readiness
// budget: min_available or max_unavailable, as an integer or a percentage
// of the configured backends, default min_available 1.
func TestCompute(t *testing.T) {
	cases := []struct {
		name                         string
		minAvailable, maxUnavailable string
		expected, current            int
		wantDesired, wantAllowed     int
		wantHolds                    bool
	}{
		{name: "minAvailable 2 of 3 healthy allows 1", minAvailable: "2", expected: 3, current: 3, wantDesired: 2, wantAllowed: 1, wantHolds: true},
		{name: "minAvailable 3 of 3 allows 0", minAvailable: "3", expected: 3, current: 3, wantDesired: 3, wantAllowed: 0, wantHolds: true},
		{name: "minAvailable 3 with 2 in service fails", minAvailable: "3", expected: 3, current: 2, wantDesired: 3, wantAllowed: 0, wantHolds: false},
		{name: "minAvailable 50% of 7 needs 4", minAvailable: "50%", expected: 7, current: 4, wantDesired: 4, wantAllowed: 0, wantHolds: true},
		{name: "minAvailable 50% of 7 with 3 fails", minAvailable: "50%", expected: 7, current: 3, wantDesired: 4, wantAllowed: 0, wantHolds: false},
		{name: "maxUnavailable 30% of 1 lets it go", maxUnavailable: "30%", expected: 1, current: 0, wantDesired: 0, wantAllowed: 0, wantHolds: true},
		{name: "maxUnavailable 1 of 4", maxUnavailable: "1", expected: 4, current: 4, wantDesired: 3, wantAllowed: 1, wantHolds: true},
		{name: "maxUnavailable above the pool clamps to 0", maxUnavailable: "9", expected: 4, current: 0, wantDesired: 0, wantAllowed: 0, wantHolds: true},
		{name: "default is minAvailable 1", expected: 3, current: 2, wantDesired: 1, wantAllowed: 1, wantHolds: true},
		{name: "default with nothing in service fails", expected: 3, current: 0, wantDesired: 1, wantAllowed: 0, wantHolds: false},
		{name: "an empty pool expects 0", minAvailable: "50%", expected: 0, current: 0, wantDesired: 0, wantAllowed: 0, wantHolds: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r config.Readiness
			if c.minAvailable != "" {
				r.MinAvailable = intOrPercent(t, c.minAvailable)
			}
			if c.maxUnavailable != "" {
				r.MaxUnavailable = intOrPercent(t, c.maxUnavailable)
			}
			b := Compute(r, c.expected, c.current)
			if b.Expected != c.expected || b.CurrentHealthy != c.current || b.DesiredHealthy != c.wantDesired || b.DisruptionsAllowed != c.wantAllowed || b.Holds() != c.wantHolds {
				t.Errorf("got %+v holds=%v, want desired %d allowed %d holds=%v", b, b.Holds(), c.wantDesired, c.wantAllowed, c.wantHolds)
			}
		})
	}
}

// TestMinAvailableAllOfPoolAllowsNothingForever: however long a full pool
// stays healthy, min_available equal to the pool never allows a disruption.
func TestMinAvailableAllOfPoolAllowsNothingForever(t *testing.T) {
	r := config.Readiness{MinAvailable: intOrPercent(t, "100%")}
	for n := 1; n <= 50; n++ {
		if b := Compute(r, n, n); b.DisruptionsAllowed != 0 || !b.Holds() {
			t.Fatalf("pool of %d: %+v", n, b)
		}
	}
}

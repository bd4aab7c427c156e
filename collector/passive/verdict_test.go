package passive

import (
	"testing"

	"github.com/probegate/probegate/config"
)

func TestShouldEject(t *testing.T) {
	maxFailures := config.PassiveHealth{MaxFailures: 5, MinRequests: 10}
	ratio := config.PassiveHealth{MinSuccessRatio: 0.8, MinRequests: 10}
	for _, c := range []struct {
		name   string
		policy config.PassiveHealth
		counts Counts
		want   bool
	}{
		{"one short of max_failures", maxFailures, Counts{Successes: 100, Failures: 4}, false},
		{"exactly max_failures", maxFailures, Counts{Successes: 100, Failures: 5}, true},
		{"max_failures needs no min_requests", maxFailures, Counts{Failures: 5}, true},
		{"max_failures 0 is off", config.PassiveHealth{}, Counts{Failures: 1000}, false},
		{"ratio below, too few requests", ratio, Counts{Successes: 0, Failures: 9}, false},
		{"ratio below at min_requests", ratio, Counts{Successes: 7, Failures: 3}, true},
		{"ratio exactly at the minimum", ratio, Counts{Successes: 8, Failures: 2}, false},
		{"ratio above", ratio, Counts{Successes: 95, Failures: 5}, false},
		{"ratio with min_requests 0 needs one request", config.PassiveHealth{MinSuccessRatio: 0.5}, Counts{}, false},
	} {
		if got := shouldEject(c.counts, c.policy); got != c.want {
			t.Errorf("%s: shouldEject(%+v) = %v; want %v", c.name, c.counts, got, c.want)
		}
	}
}

func TestEjectionAllowed(t *testing.T) {
	for _, c := range []struct {
		ejected, configured int
		percent             float64
		want                bool
	}{
		{0, 3, 50, true},
		{1, 3, 50, false},
		{0, 2, 50, true},
		{1, 2, 50, false},
		{0, 1, 50, false},
		{0, 1, 100, true},
		{1, 10, 20, true},
		{2, 10, 20, false},
		{0, 5, 0, false},
	} {
		if got := EjectionAllowed(c.ejected, c.configured, c.percent); got != c.want {
			t.Errorf("EjectionAllowed(%d of %d, %v%%) = %v; want %v", c.ejected, c.configured, c.percent, got, c.want)
		}
	}
}

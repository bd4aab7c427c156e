// Package budget is the arithmetic of the readiness budget, a Kubernetes
// PodDisruptionBudget's: of the expected backends, how many must be in
// service for the budget to hold and how many more may leave it. The pool
// computes it over its backends, /ready and the maintenance API judge by
// it, and check-config by it over a configuration alone.
//
// It is pure: the counts are parameters.
package budget

import "github.com/probegate/probegate/config"

// Budget is the readiness budget of a pool at one moment.
type Budget struct {
	// Expected is the number of configured backends.
	Expected int `json:"expected"`
	// CurrentHealthy is the number in service, not counting fail-open.
	CurrentHealthy int `json:"current_healthy"`
	// DesiredHealthy is how many must be in service for the budget to hold.
	DesiredHealthy int `json:"desired_healthy"`
	// DisruptionsAllowed is how many more may leave service.
	DisruptionsAllowed int `json:"disruptions_allowed"`
}

// Holds reports whether enough backends are in service.
func (b Budget) Holds() bool { return b.CurrentHealthy >= b.DesiredHealthy }

// Compute applies the readiness settings to a pool of expected backends
// of which currentHealthy are in service. With neither key set it is
// min_available 1.
func Compute(r config.Readiness, expected, currentHealthy int) Budget {
	if r.MinAvailable == nil && r.MaxUnavailable == nil {
		return of(&config.IntOrPercent{Value: 1}, nil, expected, currentHealthy)
	}
	return of(r.MinAvailable, r.MaxUnavailable, expected, currentHealthy)
}

// of is the one arithmetic of every budget, the pool's and each group's:
// minAvailable, else maxUnavailable, of expected (percentages round up),
// and with neither none at all (DesiredHealthy 0).
func of(minAvailable, maxUnavailable *config.IntOrPercent, expected, currentHealthy int) Budget {
	desired := 0
	switch {
	case minAvailable != nil:
		desired = minAvailable.Of(expected)
	case maxUnavailable != nil:
		desired = max(0, expected-maxUnavailable.Of(expected))
	}
	return Budget{
		Expected:           expected,
		CurrentHealthy:     currentHealthy,
		DesiredHealthy:     desired,
		DisruptionsAllowed: max(0, currentHealthy-desired),
	}
}

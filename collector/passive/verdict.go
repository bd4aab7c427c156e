package passive

import "github.com/probegate/probegate/config"

// shouldEject is the passive-health verdict on a backend's window:
// max_failures failures, or a success ratio below min_success_ratio once
// min_requests outcomes are in. A max_failures or min_success_ratio of 0
// turns that rule off.
func shouldEject(c Counts, p config.PassiveHealth) bool {
	if p.MaxFailures > 0 && int64(c.Failures) >= int64(p.MaxFailures) {
		return true
	}
	requests := int64(c.Requests())
	return p.MinSuccessRatio > 0 && requests > 0 && requests >= int64(p.MinRequests) &&
		float64(c.Successes) < p.MinSuccessRatio*float64(requests)
}

// EjectionAllowed reports whether one more backend may be ejected when
// ejected of configured backends already are, without more than
// maxEjectedPercent of the pool ejected.
func EjectionAllowed(ejected, configured int, maxEjectedPercent float64) bool {
	return float64(ejected+1)*100 <= maxEjectedPercent*float64(configured)
}

package budget

import "time"

// AllowsDisruption reports whether one more backend may leave service with
// the budget still holding. It is the one floor of every ejector (passive
// health and outlier detection alike): none takes the pool below
// DesiredHealthy, whatever traffic a client sends.
func (b Budget) AllowsDisruption() bool { return b.DisruptionsAllowed > 0 }

// Suppression remembers when an ejector last reported an ejection of one
// backend that the budget did not allow, so that a backend failing for a
// whole window is reported once a window, not at every failure. Its zero
// value has reported none.
type Suppression struct {
	at time.Time
}

// First reports whether an ejection suppressed at now is the first in
// window, to be counted and logged, and remembers it when it is.
func (s *Suppression) First(now time.Time, window time.Duration) bool {
	first := s.at.IsZero() || now.Sub(s.at) >= window || now.Before(s.at)
	if first {
		s.at = now
	}
	return first
}

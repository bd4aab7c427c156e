package passive

import (
	"time"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"
)

// State is what one backend keeps for passive health: its window of
// outcomes, when passive health last ejected it and how often. Its zero
// value is a backend never ejected. It is not safe for concurrent use: the
// backend's mutex guards it.
type State struct {
	// window is nil until passive health records an outcome, and again
	// once it is forgotten, so that a backend of a pool without passive
	// health holds none.
	window    *Window
	ejectedAt time.Time
	ejections uint64
	// suppressed is when an ejection the readiness budget did not allow
	// was last reported, so that a backend failing for a whole window is
	// counted and logged once a window.
	suppressed budget.Suppression
}

// Record adds the outcome o at now to the window and reports whether the
// window now calls for an ejection (shouldEject). An outcome that says
// nothing about the backend (a local failure, a failure every backend of
// the round shared) is left out, as is everything while p is off.
func (s *State) Record(now time.Time, o traffic.Outcome, p config.PassiveHealth) (ejectDue bool) {
	if !p.Enabled || o.Reason == traffic.Local || o.Correlated {
		return false
	}
	if s.window == nil {
		s.window = new(Window)
	}
	return shouldEject(s.window.Record(now, time.Duration(p.Window), o.Failed), p)
}

// Clone is a copy of the state that shares nothing with it, for a backend
// that inherits the state of the one it replaces: the two may be written
// at once, each under its own backend's mutex.
func (s *State) Clone() State {
	c := *s
	if s.window != nil {
		window := *s.window
		c.window = &window
	}
	return c
}

// ForgetWindow drops the window of outcomes, and the memory it holds, for
// a pool whose passive health was turned off: the ejection and its count
// stay.
func (s *State) ForgetWindow() { s.window = nil }

// Ejectable reports whether passive health may eject a backend with health
// h: it is in service, not ejected already, and not in maintenance.
func Ejectable(h health.Health, inMaintenance bool) bool {
	return !h.Ejected && h.InService() && !inMaintenance
}

// Eject records an ejection at now and returns the counts of the window
// that caused it. The window starts afresh: the failures that ejected the
// backend must not eject it again the moment it is readmitted.
func (s *State) Eject(now time.Time, window time.Duration) Counts {
	counts := s.Counts(now, window)
	s.ejections++
	s.ejectedAt = now
	s.ForgetWindow()
	return counts
}

// Suppress reports whether an ejection the readiness budget does not
// allow at now is the first in a window, and so to be counted and logged.
func (s *State) Suppress(now time.Time, window time.Duration) (first bool) {
	return s.suppressed.First(now, window)
}

// ReadmitAt is when the elapsed window readmits a backend that probes
// cannot readmit: window after its last ejection.
func (s *State) ReadmitAt(window time.Duration) time.Time {
	return s.ejectedAt.Add(window)
}

// Counts returns the outcomes in the window that ends at now.
func (s *State) Counts(now time.Time, window time.Duration) Counts {
	if s.window == nil {
		return Counts{}
	}
	return s.window.Counts(now, window)
}

// Ejections counts the ejections so far.
func (s *State) Ejections() uint64 { return s.ejections }

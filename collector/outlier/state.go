package outlier

import (
	"time"

	"github.com/probegate/probegate/collector/budget"
)

// State is what one backend keeps for outlier detection: its window of
// rounds, its ejection with the back-off, the ok probes its readmission
// counts and its ejections by reason. Its zero value is a backend never
// ejected. It is not safe for concurrent use: the backend's mutex guards
// it.
type State struct {
	// stats is the window, nil until the first round is recorded and
	// again once it is forgotten: it is most of the state's size, and
	// every backend of a pool without outlier detection holds a State.
	stats    *Stats
	ejection Ejection
	// enforced is set while the ejection takes the backend out of
	// service; an ejection that is not enforced is a dry run's record.
	enforced bool
	// good counts the consecutive ok probes since the ejection began.
	good int
	// suppressed is when an ejection of the backend was last
	// suppressed, so that a lasting outlier is counted once a window.
	suppressed budget.Suppression
	// ejections counts ejections by reason, enforced ([1]) or not ([0]).
	ejections [NumReasons][2]uint64
}

// Snapshot is a copy of a backend's outlier detection state.
type Snapshot struct {
	// Ejected is set while outlier detection holds the backend out (or,
	// in a dry run, would).
	Ejected bool
	// Enforced is false for a dry run's ejection.
	Enforced bool
	Reason   Reason
	// Since is when the ejection began and Until when it is over;
	// readmission also needs ok probes.
	Since, Until time.Time
	// Ejections counts ejections by reason, not enforced ([0]) and
	// enforced ([1]).
	Ejections [NumReasons][2]uint64
}

// Record adds one round at now to the window; a backend ejected, also by a
// dry run, is not asked and records nothing.
func (s *State) Record(now time.Time, window time.Duration, failed bool, latency time.Duration) {
	if s.ejection.Ejected {
		return
	}
	if s.stats == nil {
		s.stats = new(Stats)
	}
	s.stats.Record(now, window, failed, latency)
}

// Summary decays the back-off to now and summarises the window for
// judging; judged is false while the backend is ejected.
func (s *State) Summary(now time.Time, set Settings) (sum Summary, judged bool) {
	s.ejection.Decay(now, set)
	if s.ejection.Ejected {
		return Summary{}, false
	}
	if s.stats == nil {
		return Summary{}, true
	}
	return s.stats.Summary(now, set.Window), true
}

// Clone is a copy of the state that shares nothing with it, for a backend
// that inherits the state of the one it replaces: the two may be written
// at once, each under its own backend's mutex.
func (s *State) Clone() State {
	c := *s
	if s.stats != nil {
		stats := *s.stats
		c.stats = &stats
	}
	return c
}

// ForgetWindow drops the window of rounds, and the memory it holds, for a
// pool whose outlier detection was turned off: the ejection, its back-off
// and the counts stay.
func (s *State) ForgetWindow() { s.stats = nil }

// Eject starts an ejection at now for reason r, enforced or as a dry
// run's record, and returns it; ok is false when the backend is ejected
// already. The window starts afresh, as does the count of ok probes.
func (s *State) Eject(now time.Time, r Reason, set Settings, enforce bool) (e Ejection, ok bool) {
	if s.ejection.Ejected {
		return Ejection{}, false
	}
	s.ejection.Eject(now, r, set)
	s.enforced, s.good = enforce, 0
	s.ForgetWindow()
	s.ejections[r][boolIndex(enforce)]++
	return s.ejection, true
}

// Enforced reports whether an enforced ejection holds the backend out.
func (s *State) Enforced() bool { return s.ejection.Ejected && s.enforced }

// Suppress reports whether an ejection the readiness budget does not
// allow at now is the first in a window, and so to be counted and logged.
func (s *State) Suppress(now time.Time, window time.Duration) (first bool) {
	return s.suppressed.First(now, window)
}

// Probe counts a probe result toward the readmission of an ejected
// backend: ok probes in a row. It reports whether the backend is ejected.
func (s *State) Probe(ok bool) (ejected bool) {
	if !s.ejection.Ejected {
		return false
	}
	if ok {
		s.good++
	} else {
		s.good = 0
	}
	return true
}

// OKProbes is the number of ok probes in a row since the ejection began.
func (s *State) OKProbes() int { return s.good }

// Pending reports whether an ejection is not yet over at now, and when
// it will be.
func (s *State) Pending(now time.Time) (until time.Time, pending bool) {
	if !s.ejection.Ejected || s.ejection.Over(now) {
		return time.Time{}, false
	}
	return s.ejection.Until, true
}

// Readmit ends an ejection that is over at now once okProbes ok probes
// in a row have come since it began (0 for a backend no probe can vouch
// for). ended says whether it did, and enforced whether the ejection held
// the backend out (false for a dry run's).
func (s *State) Readmit(now time.Time, okProbes int) (ended, enforced bool) {
	if !s.ejection.Over(now) || s.good < okProbes {
		return false, false
	}
	enforced = s.enforced
	s.ejection.Readmit(now)
	s.enforced = false
	s.ForgetWindow()
	return true, enforced
}

// Snapshot copies the state.
func (s *State) Snapshot() Snapshot {
	e := s.ejection
	return Snapshot{Ejected: e.Ejected, Enforced: s.enforced, Reason: e.Reason, Since: e.Since, Until: e.Until,
		Ejections: s.ejections}
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

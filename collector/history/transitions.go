package history

import (
	"sync"
	"time"

	"github.com/probegate/probegate/collector/health"
)

// TransitionLength is how many of a pool's last state changes its Log
// keeps for the status page.
const TransitionLength = 50

// The causes of a state change besides a probe.
const (
	CauseProbe       = "probe"
	CauseMaintenance = "maintenance"
	CauseEjection    = "ejection"
	CauseReadmission = "readmission"
)

// Transition is one state change of a backend.
type Transition struct {
	Time     time.Time
	Backend  string
	From, To health.ServedState
	// Cause is CauseProbe when a probe result caused it, whose class,
	// reason and status follow; otherwise what did (maintenance, an
	// ejection by fan-out traffic, a readmission).
	Cause      string
	Class      health.Class
	Reason     health.Reason
	StatusCode int
	Status     string
}

// Log is a fixed ring of a pool's last TransitionLength state changes,
// shared by its backends. Its zero value is empty and ready. It is safe
// for concurrent use, and its mutex is the innermost lock of the pool:
// it is taken inside a backend's, never the other way round.
type Log struct {
	mu      sync.Mutex
	entries [TransitionLength]Transition
	next, n int
}

// Add records t, overwriting the oldest change once the ring is full. It
// does not allocate.
func (l *Log) Add(t Transition) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries[l.next] = t
	l.next = (l.next + 1) % TransitionLength
	l.n = min(l.n+1, TransitionLength)
}

// NewestFirst returns the state changes, the latest first, in a new slice.
func (l *Log) NewestFirst() []Transition {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Transition, l.n)
	for i := range out {
		out[i] = l.entries[(l.next-1-i+TransitionLength)%TransitionLength]
	}
	return out
}

// ProbeTransition is the change from before to after that the probe
// result r caused, at now.
func ProbeTransition(backend string, before, after health.ServedState, now time.Time, r health.Result) Transition {
	return Transition{Time: now, Backend: backend, From: before, To: after,
		Cause: CauseProbe, Class: r.Class, Reason: r.Reason, StatusCode: r.StatusCode, Status: r.Status}
}

// OverlayTransition is a change from before to after at now that no probe
// caused, with the cause it names: maintenance when either side is in
// maintenance, else an ejection or a readmission by passive health (one
// that an outlier ejection hid on either side is neither).
func OverlayTransition(backend string, before, after health.Served, now time.Time) Transition {
	t := Transition{Time: now, Backend: backend, From: before.State(), To: after.State()}
	switch {
	case before.Overlay == health.OverlayMaintenance || after.Overlay == health.OverlayMaintenance:
		t.Cause = CauseMaintenance
	case after.Overlay == health.OverlayPassiveEjection && !before.Ejected():
		t.Cause = CauseEjection
	case before.Overlay == health.OverlayPassiveEjection && !after.Ejected():
		t.Cause = CauseReadmission
	}
	return t
}
